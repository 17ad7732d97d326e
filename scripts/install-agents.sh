#!/usr/bin/env bash
# Installs the agent CLIs the replay harnesses and their tests drive, at pinned versions, into
# one folder (default: .tools/agents in the repository; override with SKILLSLEEP_AGENTS_DIR).
# npm's own cache (~/.npm) is reused between runs, so a second install reads no network.
# Prints the folder's bin directory as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_VERSION="2.1.332"
CODEX_VERSION="0.171.0"
OPENCLAW_VERSION="2026.9.6"
NODE24_VERSION="24"          # OpenClaw needs Node >= 24.16; npm package node@24 ships one

dest="${SKILLSLEEP_AGENTS_DIR:-$PWD/.tools/agents}"
mkdir -p "$dest"
# One install at a time into one folder (the test workers and .ci/run may start it together): the
# others wait here, then find the stamp.
exec 9>"$dest/.install.lock"
flock 9
stamp="$dest/.installed"
want="claude=$CLAUDE_VERSION codex=$CODEX_VERSION openclaw=$OPENCLAW_VERSION node=$NODE24_VERSION"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "$dest/node_modules/.bin"
  exit 0
fi

if ! command -v npm >/dev/null; then
  if command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "install-agents: npm is not installed; install Node.js 20+ and npm first" >&2
    exit 1
  fi
fi

cd "$dest"
[[ -f package.json ]] || echo '{"name":"skillsleep-agents","private":true}' > package.json
npm install --save-exact --no-audit --no-fund --loglevel=error --prefer-offline \
  "@anthropic-ai/claude-code@$CLAUDE_VERSION" \
  "@openai/codex@$CODEX_VERSION" \
  "node@$NODE24_VERSION"
# OpenClaw's install scripts need Node 24 on PATH.
PATH="$dest/node_modules/node/bin:$PATH" npm install --save-exact --no-audit --no-fund --loglevel=error \
  --prefer-offline "openclaw@$OPENCLAW_VERSION"
echo "$want" > "$stamp"
echo "$dest/node_modules/.bin"
