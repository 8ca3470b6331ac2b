#!/usr/bin/env bash
# Build bgbench's image (deploy/Dockerfile) and the Compose example's PostgreSQL image on a
# base made here: Debian 12 by debootstrap, imported with `docker import`, for machines that
# reach apt and PyPI but no image registry (CI). A base already present is reused.
#
#   deploy/docker/build.sh            # the base if missing, then both images
#   deploy/docker/build.sh base       # the base only
#   deploy/docker/build.sh add-ca F   # the base (present) made to trust the CAs in F too
#
# BGBENCH_BASE (bgbench-base:bookworm), BGBENCH_IMAGE (bgbench:local),
# BGBENCH_POSTGRES_IMAGE (bgbench-postgres:local), DEBIAN_MIRROR (http://deb.debian.org/debian).
# BGBENCH_BUILD_CA: a PEM file of CA certificates the base trusts besides Debian's, for a
# network whose HTTPS goes through a proxy with its own CA (pip reaches PyPI through it).
# With a registry at hand, skip this: `docker build -f deploy/Dockerfile -t bgbench .` builds
# on python:3.11-slim.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE="${BGBENCH_BASE:-bgbench-base:bookworm}"
IMAGE="${BGBENCH_IMAGE:-bgbench:local}"
POSTGRES_IMAGE="${BGBENCH_POSTGRES_IMAGE:-bgbench-postgres:local}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# One build at a time: scripts/test starts one early, and the container tests' own call
# waits for it, then finds every layer made.
exec 9>"${TMPDIR:-/tmp}/bgbench-docker-build.lock"
flock 9

build_base() {
    if docker image inspect "$BASE" >/dev/null 2>&1; then
        echo "base $BASE: present"
        return
    fi
    command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }
    local rootfs
    rootfs="$(mktemp -d)"
    # shellcheck disable=SC2064 # the path is fixed now
    trap "rm -rf '$rootfs'" EXIT
    local started=$SECONDS
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; exit 1; }
    rm -f "$rootfs.log"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import -c 'ENV LANG=C.UTF-8' -c 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
    if [ -n "${BGBENCH_BUILD_CA:-}" ]; then
        add_build_ca "$BGBENCH_BUILD_CA"
    fi
    echo "base $BASE: built in $((SECONDS - started)) s"
}

add_build_ca() {  # the base trusts the CAs in $1 too (apt's and pip's HTTPS)
    local context
    context="$(mktemp -d)"
    cp "$1" "$context/build-ca.crt"
    printf '%s\n' "FROM $BASE" "COPY build-ca.crt /usr/local/share/ca-certificates/" \
        "RUN update-ca-certificates >/dev/null" \
        "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt" >"$context/Dockerfile"
    docker build -q -t "$BASE" "$context" >/dev/null
    rm -rf "$context"
}

case "${1:-}" in
    base) build_base; exit 0 ;;
    add-ca) add_build_ca "${2:?add-ca CA_FILE}"; exit 0 ;;
esac
build_base
started=$SECONDS
docker build -q -f deploy/Dockerfile --build-arg BASE="$BASE" -t "$IMAGE" . >/dev/null
echo "image $IMAGE: built in $((SECONDS - started)) s"
started=$SECONDS
docker build -q -f deploy/compose/postgres.Dockerfile --build-arg BASE="$BASE" \
    -t "$POSTGRES_IMAGE" deploy/compose >/dev/null
echo "image $POSTGRES_IMAGE: built in $((SECONDS - started)) s"
