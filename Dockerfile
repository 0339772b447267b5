# The dashboard image: web server (gunicorn + whitenoise) and Celery worker share it.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 UV_NO_CACHE=1 UV_COMPILE_BYTECODE=1 \
    UV_PROJECT_ENVIRONMENT=/app/.venv PATH=/app/.venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=dashboard.settings STATIC_ROOT=/app/staticfiles
WORKDIR /app

# The versions of uv.lock, as `make install` installs them (the web extra only): first the
# dependencies alone, a layer that a change to the code does not rebuild, then the project.
RUN pip install 'uv==0.13.9'
COPY pyproject.toml uv.lock ./
RUN uv sync --locked --extra web --extra docs --no-install-project
COPY . .
RUN uv sync --locked --extra web --extra docs \
 && DEBUG=0 SECRET_KEY=build-time-only-key-not-used-at-run-time python manage.py collectstatic --noinput -v0
# The documentation site served at /docs/ (offline; without it /docs/ says how to build it).
RUN NO_MKDOCS_2_WARNING=1 python -m mkdocs build --quiet || echo "warning: the documentation site did not build"

# Without .git inside the image, the code version comes from the build (docker compose build --build-arg).
ARG SIMCORE_CODE_VERSION=""
ENV SIMCORE_CODE_VERSION=${SIMCORE_CODE_VERSION}

# /app/var/records: the records volume's mount point, owned by the app's user (docker-compose.yml).
RUN useradd --create-home --uid 1000 simcore && mkdir -p /app/var/records && chown -R simcore /app/var
USER simcore
EXPOSE 8000
CMD ["gunicorn", "dashboard.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4", "--timeout", "300"]
