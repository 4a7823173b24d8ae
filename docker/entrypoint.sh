#!/bin/sh
# Quiver container entrypoint: make sure a SECRET_KEY and an audit key exist, then
# run the command.
# Without SECRET_KEY or SECRET_KEY_FILE, one is generated once into the state
# volume ($QUIVER_STATE_DIR, /data) and shared by every container mounting it.
set -eu
STATE_DIR="${QUIVER_STATE_DIR:-/data}"
if [ -z "${SECRET_KEY:-}" ] && [ -z "${SECRET_KEY_FILE:-}" ]; then
  key_file="$STATE_DIR/secret_key"
  if [ ! -s "$key_file" ]; then
    (umask 077 && python -c 'import secrets; print(secrets.token_urlsafe(50))' > "$key_file")
  fi
  export SECRET_KEY_FILE="$key_file"
fi
if [ -z "${QUIVER_AUDIT_KEY:-}" ] && [ -z "${QUIVER_AUDIT_KEY_FILE:-}" ]; then
  audit_key="$STATE_DIR/audit_key"
  if [ ! -s "$audit_key" ]; then
    (umask 077 && python -c 'import secrets; print(secrets.token_hex(32))' > "$audit_key")
  fi
  export QUIVER_AUDIT_KEY_FILE="$audit_key"
fi
# Metrics: this container's processes add up in PROMETHEUS_MULTIPROC_DIR; files a
# previous start left would count again, so it starts empty.
if [ -n "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
  rm -rf "$PROMETHEUS_MULTIPROC_DIR" && mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
fi
exec "$@"
