# dramock in a container: `docker build -t dramock:local .` then
#   docker run --rm -p 8080:8080 dramock:local            # serve: API server, controllers, scheduler, 2 nodes
#   docker run --rm dramock:local apiserver --help         # or any other subcommand (see docker-compose.yml)
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# A non-root user owning every directory a component writes. Named volumes mounted on these paths start as a
# copy of them, ownership included, so the user can write there too:
#   /data                               the API server's SQLite database and pki/ (CA, keys) (--data-dir)
#   /data/pki                           the same, for a volume of its own (the ha profile's API servers share one)
#   /etc/dramock                        the components' kubeconfigs (docker-compose.yml)
#   /var/lib/kubelet/plugins_registry   registration sockets the kubelet shim watches
#   /var/lib/kubelet/plugins            DRA driver endpoints (<driver>/dra.sock)
#   /var/lib/kubelet/cdi                the example driver's CDI spec files
RUN groupadd --system --gid 10001 dramock \
 && useradd --system --uid 10001 --gid dramock --home-dir /home/dramock --create-home \
        --shell /usr/sbin/nologin dramock \
 && mkdir -p /data/pki /etc/dramock /var/lib/kubelet/plugins_registry /var/lib/kubelet/plugins /var/lib/kubelet/cdi \
 && chown -R dramock:dramock /data /etc/dramock /var/lib/kubelet

# Only what `pip install .` needs (with psycopg, for --database-url postgresql+psycopg://…) (pyproject names README.md as the readme); the build tree is dropped after.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY dramock ./dramock
RUN pip install --no-cache-dir '.[postgres]' && rm -rf /src
WORKDIR /home/dramock

ENV DRAMOCK_DATA_DIR=/data
USER 10001:10001
EXPOSE 8080 6443

ENTRYPOINT ["dramock"]
CMD ["serve", "--bind-address", "0.0.0.0"]
