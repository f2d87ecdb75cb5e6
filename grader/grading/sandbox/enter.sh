#!/bin/sh
# Run a command in a submission's sandbox (see grader/isolation.py). Called as root:
#   enter.sh CONFIG [--conn CONNECTION_FILE] CMD [ARGS...]
# CONFIG is a shell fragment the grader wrote for this submission (root-only folder); it sets
#   SB_ROOT      an empty folder; the sandbox's root file system (a tmpfs) is mounted on it
#   SB_BINDS     ':'-separated paths bound read-only at the same place (the allow-list)
#   SB_UID SB_GID  the submission's own user (unique among running submissions)
#   SB_CGROUPS   ':'-separated cgroup folders this process joins before anything starts
#   SB_DISK SB_SHM  tmpfs sizes: the root (home, /tmp, work folder) and /dev/shm
#   SB_ENV       a file that puts the command's NAME=VALUE environment in front of "$@"
# --conn: a kernel connection file, copied to /home/learner/.kernel.json (owner only).
# The command runs as PID 1 of a new PID namespace: when it exits, the kernel kills every process
# it left behind. Its root file system holds the allow-list and its own tmpfs folders, nothing else.
set -eu
if [ "${1:-}" != "--inside" ]; then
  . "$1"
  old_ifs=$IFS; IFS=:
  for cg in ${SB_CGROUPS:-}; do echo $$ > "$cg/cgroup.procs"; done
  IFS=$old_ifs
  exec unshare --mount --pid --ipc --fork --kill-child --propagation private /bin/sh "$0" --inside "$@"
fi
shift
config=$1; shift
. "$config"
conn=
if [ "${1:-}" = "--conn" ]; then conn=$2; shift 2; fi
r=$SB_ROOT
mount -t tmpfs -o "size=$SB_DISK,mode=755,nosuid,nodev" raylab-sandbox "$r"
old_ifs=$IFS; IFS=:
for p in $SB_BINDS; do
  if [ -L "$p" ]; then mkdir -p "$r$(dirname "$p")"; ln -s "$(readlink "$p")" "$r$p"; continue; fi
  [ -e "$p" ] || continue
  if [ -d "$p" ]; then mkdir -p "$r$p"; else mkdir -p "$r$(dirname "$p")"; : > "$r$p"; fi
  mount --bind "$p" "$r$p"
  mount -o remount,bind,ro,nosuid,nodev "$r$p"
done
IFS=$old_ifs
mkdir -p "$r/proc" "$r/dev" "$r/tmp" "$r/etc" "$r/home/learner/work" "$r/home/learner/scratch"
mount -t proc -o nosuid,nodev,noexec proc "$r/proc"
mount -t tmpfs -o size=64k,mode=755,nosuid raylab-dev "$r/dev"
for d in null zero full random urandom tty; do : > "$r/dev/$d"; mount --bind "/dev/$d" "$r/dev/$d"; done
mkdir "$r/dev/shm"
mount -t tmpfs -o "size=$SB_SHM,mode=1777,nosuid,nodev" raylab-shm "$r/dev/shm"
ln -s /proc/self/fd "$r/dev/fd"
ln -s /proc/self/fd/0 "$r/dev/stdin"; ln -s /proc/self/fd/1 "$r/dev/stdout"; ln -s /proc/self/fd/2 "$r/dev/stderr"
chmod 1777 "$r/tmp"
# Names for the submission's user: getpass, Ray and PyTorch look the user up.
printf 'root:x:0:0::/root:/bin/sh\nlearner:x:%s:%s::/home/learner:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n' \
  "$SB_UID" "$SB_GID" > "$r/etc/passwd"
printf 'root:x:0:\nlearner:x:%s:\nnogroup:x:65534:\n' "$SB_GID" > "$r/etc/group"
if [ -n "$conn" ]; then cp "$conn" "$r/home/learner/.kernel.json"; chmod 600 "$r/home/learner/.kernel.json"; fi
chown -R "$SB_UID:$SB_GID" "$r/home/learner"
chmod 700 "$r/home/learner"
. "$SB_ENV"
cd "$r"
mkdir .old
pivot_root . .old
umount -l /.old
rmdir /.old
cd /home/learner/work
exec setpriv --reuid="$SB_UID" --regid="$SB_GID" --clear-groups --no-new-privs --inh-caps=-all \
  --bounding-set=-all env -i "$@"
