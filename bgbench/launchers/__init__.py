"""Real servers on loopback (PostgreSQL, memcached, a MongoDB wire server, Cassandra,
HBase) for tests, CI, users and campaigns: standard library only, so deploy/local/servers.py
runs them from a checkout before bgbench is installed."""
