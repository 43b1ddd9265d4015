#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests of the state store.
#
#   eval "$(scripts/postgres.sh start)"   # prints: export XCE_TEST_PG_URL=postgresql://…
#   scripts/postgres.sh status            # exit 0 when running (prints the export line again)
#   scripts/postgres.sh stop              # stops it and removes its directory
#
# start installs the Debian `postgresql` package when no initdb is found (needs root), runs
# the server as the `postgres` user when called as root (initdb refuses root), listens on
# 127.0.0.1 on a free port plus a unix socket in its directory, trusts local connections
# (test use only; fsync off) and creates the database xce_test. start and stop are
# idempotent. Only the export line goes to stdout; progress and errors go to stderr.
# Environment: XCE_PG_DIR (default /tmp/xce-test-pg-<uid>), XCE_PG_START_TIMEOUT (s, 60).

set -euo pipefail

DIR="${XCE_PG_DIR:-/tmp/xce-test-pg-$(id -u)}"
DATA="$DIR/data"
SOCK="$DIR/sock"
LOG="$DIR/server.log"
DB=xce_test
TIMEOUT="${XCE_PG_START_TIMEOUT:-60}"

say() { echo "postgres.sh: $*" >&2; }
die() { say "error: $*"; exit 1; }

find_bin() {
    # the newest installed major version that has a server (a newer client alone has no initdb)
    local dir
    while read -r dir; do
        if [[ -x "$dir/initdb" ]]; then
            echo "$dir"
            return 0
        fi
    done < <(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV)
    if command -v initdb >/dev/null 2>&1; then
        # the real folder (initdb may be a symlink), where pg_ctl, pg_isready and psql live too
        dirname "$(readlink -f "$(command -v initdb)")"
    fi
}

install_postgres() {
    [[ $(id -u) -eq 0 ]] || die "no PostgreSQL found (no initdb) and not root: install the 'postgresql' package"
    say "no PostgreSQL found; installing the 'postgresql' package"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -q >&2 || die "apt-get update failed"
    timeout 900 apt-get install -y -q --no-install-recommends postgresql >&2 \
        || die "apt-get install postgresql failed"
}

# run a command as the server's owner: postgres when we are root, else ourselves
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        if command -v runuser >/dev/null 2>&1; then
            (cd "$DIR" && runuser -u postgres -- "$@")
        else
            (cd "$DIR" && su -s /bin/sh postgres -c "$(printf '%q ' "$@")")
        fi
    else
        (cd "$DIR" && "$@")
    fi
}

ensure_user() {
    [[ $(id -u) -eq 0 ]] || return 0
    if ! getent passwd postgres >/dev/null; then
        say "creating the system user postgres"
        useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh postgres \
            || die "could not create the postgres user"
    fi
}

free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$((20000 + RANDOM % 30000))
        # nothing listening there: connecting fails
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "no free TCP port found"
}

url() { echo "postgresql://postgres@127.0.0.1:$(cat "$DIR/port")/$DB"; }

running() {
    local bin
    bin=$(find_bin)
    [[ -n "$bin" && -f "$DATA/PG_VERSION" && -f "$DIR/port" ]] || return 1
    # pg_ctl trusts the pid file (a killed server may linger as a zombie); ask the server too
    as_owner "$bin/pg_ctl" -D "$DATA" status >/dev/null 2>&1 \
        && "$bin/pg_isready" -q -h 127.0.0.1 -p "$(cat "$DIR/port")" -t 5
}

start() {
    local bin port tries
    if [[ -d "$DIR" ]] && running; then
        say "already running ($(url))"
        echo "export XCE_TEST_PG_URL=$(url)"
        return 0
    fi
    bin=$(find_bin)
    if [[ -z "$bin" ]]; then
        install_postgres
        bin=$(find_bin)
        [[ -n "$bin" ]] || die "the postgresql package is installed but no initdb was found"
    fi
    ensure_user
    # a leftover directory from a crashed start: stop what may still run there, begin again
    if [[ -f "$DATA/postmaster.pid" ]]; then
        as_owner "$bin/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
    mkdir -p "$DIR"
    chmod 700 "$DIR"
    [[ $(id -u) -ne 0 ]] || chown postgres: "$DIR"
    as_owner test -w "$DIR" 2>/dev/null \
        || die "the server's user cannot write $DIR (a parent folder is closed to it); set XCE_PG_DIR under /tmp"
    as_owner mkdir -p "$SOCK"
    as_owner "$bin/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --no-locale \
        >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
    for tries in 1 2 3; do
        port=$(free_port)
        echo "$port" >"$DIR/port"
        if as_owner "$bin/pg_ctl" -D "$DATA" -l "$LOG" -w -t "$TIMEOUT" start -o \
            "-c listen_addresses=127.0.0.1 -p $port -k $SOCK -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
            >/dev/null 2>&1; then
            break
        fi
        say "the server did not start on port $port (attempt $tries); log:"
        tail -n 20 "$LOG" >&2 || true
        as_owner "$bin/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1 || true
        [[ $tries -lt 3 ]] || die "PostgreSQL did not start; see $LOG"
    done
    if ! as_owner "$bin/psql" -h "$SOCK" -p "$port" -U postgres -d postgres -tAq -v ON_ERROR_STOP=1 \
        -c "CREATE DATABASE $DB" >&2; then
        die "could not create the database $DB"
    fi
    say "PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') running in $DIR"
    echo "export XCE_TEST_PG_URL=$(url)"
}

stop() {
    local bin
    if [[ ! -d "$DIR" ]]; then
        say "not running"
        return 0
    fi
    bin=$(find_bin)
    if [[ -n "$bin" && -f "$DATA/postmaster.pid" ]]; then
        as_owner "$bin/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >/dev/null 2>&1 \
            || as_owner "$bin/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >/dev/null 2>&1 \
            || say "warning: pg_ctl stop failed; removing $DIR anyway"
    fi
    rm -rf "$DIR"
    say "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status)
        if [[ -d "$DIR" ]] && running; then echo "export XCE_TEST_PG_URL=$(url)"; else exit 1; fi
        ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
