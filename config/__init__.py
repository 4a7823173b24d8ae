from config.threads import one_blas_thread

one_blas_thread()  # before anything imports numpy (config.threads says why)

from config.celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
