#!/bin/sh
# Run a command as the sandbox user in a private mount namespace (see grader/isolation.py).
# Called as root. Environment:
#   RAYLAB_SANDBOX_USER    uid:gid to run as (default 65534:65534, nobody)
#   RAYLAB_SANDBOX_HOME    writable folder of that user (HOME, scratch, Ray temp dir)
#   RAYLAB_SANDBOX_HIDE    ':'-separated paths to hide (folders: an empty tmpfs; files: /dev/null)
#   RAYLAB_SANDBOX_EXPOSE  optional 'BLOCKED:PREFIX': the interpreter lives in PREFIX below a folder
#                          BLOCKED the sandbox user cannot traverse (e.g. pyenv under /root); BLOCKED
#                          is covered by a tmpfs that holds nothing but PREFIX.
set -eu
exec unshare --mount --propagation private sh -c '
  set -eu
  if [ -n "${RAYLAB_SANDBOX_EXPOSE:-}" ]; then
    blocked=${RAYLAB_SANDBOX_EXPOSE%%:*}; prefix=${RAYLAB_SANDBOX_EXPOSE#*:}
    stage=$(mktemp -d /tmp/rg-stage.XXXXXX)
    mount --bind "$prefix" "$stage"
    mount -t tmpfs -o mode=755 raylab-cover "$blocked"
    mkdir -p "$prefix"
    mount --bind "$stage" "$prefix"
  fi
  old_ifs=$IFS; IFS=:
  for p in ${RAYLAB_SANDBOX_HIDE:-}; do
    if [ -d "$p" ]; then mount -t tmpfs -o size=64k,mode=000 raylab-hidden "$p"
    elif [ -e "$p" ]; then mount --bind /dev/null "$p"; fi
  done
  IFS=$old_ifs
  ids=${RAYLAB_SANDBOX_USER:-65534:65534}
  home=${RAYLAB_SANDBOX_HOME:?RAYLAB_SANDBOX_HOME is not set}
  export HOME="$home" RAYLAB_SCRATCH="$home/scratch" RAY_TMPDIR="$home/r" \
         MPLCONFIGDIR="$home/mpl" IPYTHONDIR="$home/ipython"
  exec setpriv --reuid="${ids%%:*}" --regid="${ids##*:}" --clear-groups --no-new-privs "$@"
' sandbox "$@"
