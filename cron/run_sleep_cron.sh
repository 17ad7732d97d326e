#!/bin/sh
# One night of skillsleep, unattended: the line `skillsleep schedule` puts in your crontab (or the
# systemd service `skillsleep schedule --systemd` writes) runs
#
#     /bin/sh run_sleep_cron.sh /absolute/path/to/skillsleep [skillsleep run flags...]
#
# with these variables set on the line itself (cron's environment is nearly empty):
#
#     SKILLSLEEP_LOG_DIR    where the logs go: <data>/logs (required)
#     SKILLSLEEP_ENV_FILE   a file of NAME=value lines read first when it exists: how your API keys
#                           reach the night without ever being written into the crontab. It is run
#                           as shell code, so it must be yours and writable by you alone (chmod 600).
#     SKILLSLEEP_KEEP_LOGS  how many cron-*.log files to keep (default 14; may be set in that file)
#
# It only calls `skillsleep run`; what it adds is what running unattended needs:
#   - never twice at once: a start while the previous night still runs writes one log line and
#     exits 0 (flock(1); where it is missing, skillsleep's own lock refuses the second night);
#   - everything `skillsleep run` prints goes to SKILLSLEEP_LOG_DIR/cron-<UTC time>-<pid>.log,
#     between a start line and an end line; the oldest logs beyond SKILLSLEEP_KEEP_LOGS are deleted;
#   - quiet (no output, exit 0) when the night ran to its end, whatever it decided, nothing new to
#     learn included; otherwise one line on stderr (cron mails it to you) and the exit code of
#     `skillsleep run`: 1 stopped early (budget, model server; the next night resumes) or failed,
#     2 bad settings.
#   - private: its logs (and what the night writes, under umask 077) are for your user alone.
set -eu
umask 077

me=skillsleep-cron
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
die() { # die CODE MESSAGE: one line on stderr (and the end line in the log, once there is one)
    if [ -n "${log:-}" ]; then printf '%s: end %s: exit %s: failed: %s\n' "$me" "$(now)" "$1" "$2" >>"$log"; fi
    printf '%s: %s\n' "$me" "$2" >&2
    exit "$1"
}

log=
[ $# -ge 1 ] || die 2 "usage: run_sleep_cron.sh SKILLSLEEP [skillsleep run flags...]; \`skillsleep schedule --print\` shows the line that runs it"
bin=$1
shift
[ -x "$bin" ] || die 2 "$bin is not an executable skillsleep; run \`skillsleep schedule\` again where skillsleep is installed"
logs=${SKILLSLEEP_LOG_DIR:-}
[ -n "$logs" ] || die 2 "SKILLSLEEP_LOG_DIR is not set; use the line \`skillsleep schedule --print\` shows"
mkdir -p "$logs" 2>/dev/null || die 2 "cannot create the log folder $logs; check its permissions or SKILLSLEEP_HOME"
log="$logs/cron-$(date -u +%Y%m%dT%H%M%SZ)-$$.log"
(: >>"$log") 2>/dev/null || { log=; die 2 "cannot write $logs/; check its permissions"; }

if command -v flock >/dev/null 2>&1; then
    (: >>"$logs/cron.lock") 2>/dev/null || die 2 "cannot write $logs/cron.lock; check its permissions"
    exec 9>>"$logs/cron.lock"
    if ! flock -n 9; then
        printf '%s: skipped %s: the previous night is still running\n' "$me" "$(now)" >>"$log"
        exit 0
    fi
fi

envfile=${SKILLSLEEP_ENV_FILE:-}
if [ -n "$envfile" ] && [ -e "$envfile" ]; then
    if [ -n "$(find -H "$envfile" -prune \( ! -user "$(id -u)" -o -perm -020 -o -perm -002 \) -print)" ]; then
        die 2 "refusing to read $envfile: it is run as shell code, so it must be yours and writable by you alone (chmod 600 $envfile)"
    fi
    set -a
    . "$envfile"
    set +a
fi

keep=${SKILLSLEEP_KEEP_LOGS:-14}
case $keep in '' | *[!0-9]* | 0) die 2 "SKILLSLEEP_KEEP_LOGS=$keep: expected a whole number >= 1" ;; esac

rotate() { # keep the newest $keep logs (their names sort by time); runs with its own "$@"
    set -- "$logs"/cron-*.log
    [ -e "$1" ] || return 0
    n=$#
    while [ "$n" -gt "$keep" ]; do
        rm -f -- "$1"
        shift
        n=$((n - 1))
    done
}
rotate

printf '%s: start %s: %s run%s\n' "$me" "$(now)" "$bin" "$(printf ' %s' "$@")" >>"$log"
rc=0
"$bin" run "$@" </dev/null >>"$log" 2>&1 9>&- || rc=$?
if [ "$rc" -eq 0 ]; then
    printf '%s: end %s: exit 0\n' "$me" "$(now)" >>"$log"
    exit 0
fi
# the one line: click's "Error: …" (its indented lines joined), else the report's "Stopped early — why"
why=$(awk -v me="$me: " '
    found && ($0 == "" || index($0, me) == 1) { exit }
    found { sub(/^[[:space:]]+/, ""); msg = msg " " $0; next }
    /^Error: / { found = 1; msg = substr($0, 8); next }
    /^\*\*Stopped early\*\* — / && stop == "" { stop = $0; sub(/^\*\*Stopped early\*\* — /, "", stop) }
    $0 != "" && index($0, me) != 1 { last = $0 }
    END { print (msg != "" ? "failed " msg : stop != "" ? "stopped-early " stop : "failed " last) }' "$log")
what=${why%% *}
why=${why#* }
if [ "$what" = stopped-early ]; then
    what="stopped early"
    why=$(printf '%s\n' "$why" | sed 's/\\\([[:punct:]]\)/\1/g') # the report's markdown escapes
fi
printf '%s: end %s: exit %s: %s: %s\n' "$me" "$(now)" "$rc" "$what" "${why:-no message}" >>"$log"
printf '%s: the night %s (exit %s): %s; log: %s\n' "$me" "$what" "$rc" "${why:-no message}" "$log" >&2
exit "$rc"
