#!/bin/sh
# The nightly script of this skillsleep installation (cron/run_sleep_cron.sh of the package), from
# the plugin folder: the same arguments (`run_sleep_cron.sh /path/to/skillsleep [run flags...]`),
# the same variables (SKILLSLEEP_LOG_DIR, SKILLSLEEP_ENV_FILE) and exit codes.
# `skillsleep schedule --openclaw --at 03:00 [run flags...]` writes the OpenClaw cron job that runs
# it with every path filled in; `skillsleep schedule --print` shows the crontab line.
set -eu
script=$(dirname -- "$0")/../../cron/run_sleep_cron.sh
[ -f "$script" ] || { echo "run_sleep_cron.sh: $script is missing; run it from the skillsleep package, or use \`skillsleep schedule --openclaw\`" >&2; exit 2; }
exec /bin/sh "$script" "$@"
