#!/usr/bin/env bash
# Make a private CA, one server certificate per agent host and a client certificate for the
# coordinator (mutual TLS), with openssl. Usage: deploy/make-certs.sh OUT_DIR HOST [HOST ...]
# HOST is a DNS name or an IP address, as the coordinator will dial it.
set -euo pipefail
out="$1"; shift
[ "$#" -ge 1 ] || { echo "usage: $0 OUT_DIR HOST [HOST ...]" >&2; exit 2; }
mkdir -p "$out"
cd "$out"
openssl req -x509 -newkey rsa:3072 -nodes -days 365 -subj "/CN=bgbench CA" \
    -keyout ca.key -out ca.pem 2>/dev/null
for host in "$@"; do
    if [[ "$host" =~ ^[0-9.]+$ ]]; then san="IP:$host"; else san="DNS:$host"; fi
    openssl req -newkey rsa:3072 -nodes -subj "/CN=$host" -keyout "agent-$host.key" \
        -out "agent-$host.csr" 2>/dev/null
    openssl x509 -req -in "agent-$host.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -days 365 -extfile <(printf "subjectAltName=%s" "$san") -out "agent-$host.pem" 2>/dev/null
    rm "agent-$host.csr"
done
openssl req -newkey rsa:3072 -nodes -subj "/CN=bgbench coordinator" -keyout coordinator.key \
    -out coordinator.csr 2>/dev/null
openssl x509 -req -in coordinator.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 \
    -out coordinator.pem 2>/dev/null
rm coordinator.csr
echo "wrote $(ls | tr '\n' ' ')to $out"
