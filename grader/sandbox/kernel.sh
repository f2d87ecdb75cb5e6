#!/bin/sh
# Kernel launcher for grading one submission (kernelspec written by grader/isolation.py): the
# learner's code runs through enter.sh as an unprivileged user with the course's secrets hidden.
#   $1                     the connection file jupyter_client wrote (root-only, 0600)
#   RAYLAB_SANDBOX_PYTHON  the interpreter of the course environment
set -eu
home="${RAYLAB_SANDBOX_HOME:?RAYLAB_SANDBOX_HOME is not set}"
ids="${RAYLAB_SANDBOX_USER:-65534:65534}"
cp "$1" "$home/kernel-connection.json"
chown "$ids" "$home/kernel-connection.json"
chmod 600 "$home/kernel-connection.json"
exec /bin/sh "$(dirname "$0")/enter.sh" "${RAYLAB_SANDBOX_PYTHON:?}" -m ipykernel_launcher \
  -f "$home/kernel-connection.json"
