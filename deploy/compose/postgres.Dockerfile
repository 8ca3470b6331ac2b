# PostgreSQL 15 (Debian 12's) for the Compose example, on the same base as bgbench's image:
# no image registry is needed (deploy/docker/build.sh builds it). With a registry at hand,
# compose.yaml may name postgres:15 instead (its POSTGRES_PASSWORD works the same).
ARG BASE=bgbench-base:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
USER postgres
EXPOSE 5432
HEALTHCHECK --interval=2s --timeout=5s --retries=60 CMD ["pg_isready", "-q", "-h", "127.0.0.1"]
ENTRYPOINT ["sh", "/usr/local/bin/postgres-entrypoint.sh"]
