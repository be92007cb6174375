#!/usr/bin/env bash
# Makes test/fixtures/migrations/: for each released schema, a database that the berth of that
# schema made and used (test/store/migration-fixtures.test.ts migrates each with today's berth).
#
# For every commit where a migration was the newest (the last such commit: the schema as it was
# released), the berth of that commit is exported with `git archive`, run as `berth server` on
# SQLite and, from the commit that brought the PostgreSQL store (bf3b4f4, schema 0006), on
# PostgreSQL too; through its own API it runs jobs to several ends — one succeeds with a log, one
# fails, one is cancelled, one is left running when the server stops — and then it is stopped.
# Kept: the SQLite data directory's berth.db and logs/ (as NNNN-sqlite.tar.gz) and a plain-SQL
# pg_dump of the PostgreSQL database (NNNN-postgres.sql.gz). Several migrations landed in one
# commit: one fixture per commit, named by its newest migration.
#
# Usage: scripts/make-migration-fixtures.sh [NNNN ...]   (needs git, node, curl, jq, pg_dump,
# PostgreSQL at $BERTH_TEST_PG_URL or postgres://postgres@127.0.0.1:5432/postgres)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/test/fixtures/migrations
PG=${BERTH_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}
MODULES=$(readlink -f "$ROOT/node_modules")

# schema → the last commit whose newest migration it was
VERSIONS=(
  0001:a57a8e6 0002:b68722b 0004:54272cc 0005:85703f3 0006:bf3b4f4 0008:2667ad5
  0009:85751fa 0010:c75b010 0013:52ffa1f 0017:305023d 0018:6803bf0 0019:096fd62
  0020:a348d14 0021:053254b 0022:88b6ecc
)
FIRST_PG=0006

say() { printf '%s\n' "$*" >&2; }

# The processes under PID (its agents, their jobs), by id.
descendants() { local c; for c in $(ps -o pid= --ppid "$1"); do echo "$c"; descendants "$c"; done; }

# Stops the server PID as an upgrade does (SIGTERM); an old berth that waits for its running job
# longer than 10 s is killed, with what runs under it.
stop_server() {
  local pid=$1 under
  under=$(descendants "$pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  # shellcheck disable=SC2086
  kill -9 "$pid" $under 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# run_version SCHEMA COMMIT STORE: a data directory (and database) the berth of COMMIT made.
run_version() {
  local schema=$1 commit=$2 store=$3 tree=$4 work
  work=$(mktemp -d /tmp/berth-fixture-XXXXXX)
  local args=(server --data-dir "$work/data" --listen 127.0.0.1:0 --config /dev/null)
  local db=""
  if [ "$store" = postgres ]; then
    db="berth_fixture_${schema}_$$"
    psql -q "$PG" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    args+=(--database "${PG%/*}/$db")
  fi
  (cd "$tree" && exec node --import tsx src/cli/main.ts "${args[@]}") >"$work/server.log" 2>&1 &
  local pid=$!
  # A failure below stops the server (and so its workers) before the script ends.
  trap 'stop_server '"$pid" EXIT
  local url=""
  for _ in $(seq 1 200); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$work/server.log" | head -1 | sed 's/listening on //') || true
    [ -n "$url" ] && break
    sleep 0.2
  done
  [ -n "$url" ] || { say "berth $commit did not start:"; cat "$work/server.log" >&2; kill $pid; exit 1; }
  local token
  token=$(cat "$work/data/admin.token")
  api() { curl -sf -X "$1" -H "authorization: Bearer $token" -H 'content-type: application/json' "$url/api/v1$2" ${3:+-d "$3"}; }
  state() { api GET "/jobs/$1" | jq -r .state; }
  wait_state() { # id state…
    local id=$1; shift
    for _ in $(seq 1 300); do
      local s; s=$(state "$id")
      for want in "$@"; do [ "$s" = "$want" ] && return 0; done
      sleep 0.1
    done
    say "job $id did not reach $* (it is $(state "$id"))"; exit 1
  }
  if [ "$schema" != 0001 ]; then
    local ok failed cancelled running
    ok=$(api POST /projects/default/jobs '{"command":["sh","-c","printf \"hello from '"$schema"'\\n\"; printf \"line two\\n\""]}' | jq -r .id)
    failed=$(api POST /projects/default/jobs '{"command":["sh","-c","echo failing >&2; exit 3"]}' | jq -r .id)
    wait_state "$ok" succeeded
    wait_state "$failed" failed
    cancelled=$(api POST /projects/default/jobs '{"command":["sleep","300"]}' | jq -r .id)
    wait_state "$cancelled" running
    api POST "/jobs/$cancelled/cancel" "{}" >/dev/null
    wait_state "$cancelled" cancelled
    running=$(api POST /projects/default/jobs '{"command":["sleep","300"]}' | jq -r .id)
    wait_state "$running" running
  fi
  stop_server "$pid"
  trap - EXIT
  if [ "$store" = sqlite ]; then
    sqlite3 "$work/data/berth.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
    mkdir -p "$work/data/logs"
    tar -czf "$OUT/$schema-sqlite.tar.gz" -C "$work/data" berth.db logs
  else
    # Plain INSERTs, without psql's meta-commands (\restrict), so that the test runs it as one query.
    pg_dump --no-owner --no-privileges --inserts "${PG%/*}/$db" | grep -v '^\\' | gzip -n >"$OUT/$schema-postgres.sql.gz"
    psql -q "$PG" -c "DROP DATABASE $db WITH (FORCE)"
  fi
  rm -rf "$work"
}

mkdir -p "$OUT"
for v in "${VERSIONS[@]}"; do
  schema=${v%%:*} commit=${v##*:}
  if [ $# -gt 0 ] && [[ " $* " != *" $schema "* ]]; then continue; fi
  tree=$(mktemp -d /tmp/berth-at-"$schema"-XXXXXX)
  git -C "$ROOT" archive "$commit" | tar -x -C "$tree"
  ln -s "$MODULES" "$tree/node_modules"
  say "schema $schema: berth of $commit"
  run_version "$schema" "$commit" sqlite "$tree"
  if [[ "$schema" > "$FIRST_PG" || "$schema" = "$FIRST_PG" ]]; then run_version "$schema" "$commit" postgres "$tree"; fi
  rm -rf "$tree"
done
ls -l "$OUT" >&2
