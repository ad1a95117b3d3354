#!/bin/sh
# cudalab-entrypoint.sh — the single-user image's entrypoint (deploy/jupyterhub/Dockerfile): a student's
# container starts as root only to become the student's own uid (CUDALAB_UID, which the hub's pre-spawn
# hook sets: cudalab_identity.py), then runs its command as that uid with no capabilities left.
#   1. /etc/passwd names the uid jovyan (home /home/jovyan), so that HOME, `id` and pwd lookups agree
#      (nbgrader takes the student's id from JUPYTERHUB_USER: singleuser/nbgrader_config.py);
#   2. the home volume is the student's: chowned once, when it was created from the image (uid 1000)
#      or belonged to another uid; symbolic links are changed themselves, never followed;
#   3. setpriv drops to uid:gid with no supplementary groups, empty capability sets (the bounding set
#      too, so no setuid binary gives them back) and no_new_privs.
# Started as any other user (`docker run` without the hub), it runs the command as it is.
# tests/deploy/test_deploy.py runs it on a copy of a passwd file and a scratch home.
# BSD-3-Clause (the project's LICENSE).
set -eu

PASSWD=${CUDALAB_ENTRYPOINT_PASSWD:-/etc/passwd}
HOME_DIR=${CUDALAB_ENTRYPOINT_HOME:-/home/jovyan}
NB_USER=jovyan

if [ "$(id -u)" != 0 ]; then
    exec "$@"
fi

uid=${CUDALAB_UID:-}
gid=${CUDALAB_GID:-100}
for value in "$uid" "$gid"; do
    case $value in
        '' | *[!0-9]* | 0*)
            echo "cudalab-entrypoint: started as root, CUDALAB_UID and CUDALAB_GID must be positive numbers" \
                 "(got uid '$uid', gid '$gid'): the hub's pre-spawn hook sets them; refusing to run as root" >&2
            exit 64 ;;
    esac
done

# 1. the passwd entry: every line but jovyan's, then jovyan with the student's uid
others=$(grep -v "^$NB_USER:" "$PASSWD" || true)
printf '%s\n%s\n' "$others" "$NB_USER:x:$uid:$gid::$HOME_DIR:/bin/bash" > "$PASSWD"

# 2. the home volume
if [ "$(stat -c %u "$HOME_DIR")" != "$uid" ]; then
    chown -R -h "$uid:$gid" "$HOME_DIR"
fi

# 3. the student, and nothing more
export HOME="$HOME_DIR" USER="$NB_USER" LOGNAME="$NB_USER"
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --ambient-caps=-all \
    --bounding-set=-all --no-new-privs -- "$@"
