#!/bin/sh
# servers.sh - the real PostgreSQL, MariaDB and Redis servers of the database/cache preload
# tests (ctest fixture "db", tests/db.cmake).
#
#   servers.sh start --dir STATE [--lifetime SECONDS]
#   servers.sh stop  --dir STATE
#
# start creates a fresh temporary directory under /tmp (short unix socket paths), starts
#   PostgreSQL 15 (initdb + postgres, trust auth, database swtest) on a unix socket and a free
#     loopback port,
#   MariaDB (mariadb-install-db + mariadbd --skip-grant-tables, database swtest) on a unix
#     socket and a free loopback port,
#   Redis (redis-server --save '' --appendonly no) on a free loopback port and a unix socket,
#   and a second Redis with a password (requirepass, random per start, in a 0600 config file)
#     on another free loopback port,
# waits (bounded, 60 s each) until each answers, and writes STATE/env: shell-style KEY=value
# lines the tests read (SW_TEST_PG_SOCKDIR, SW_TEST_PG_PORT, SW_TEST_MY_SOCKET, SW_TEST_MY_PORT,
# SW_TEST_REDIS_PORT, SW_TEST_REDIS_SOCKET, SW_TEST_REDIS_AUTH_PORT, SW_TEST_REDIS_PASSWORD,
# SW_TEST_DB_TMP). postgres and mariadbd refuse to
# run as root: as root the servers run as the user nobody (setpriv), which owns the temporary directory.
# A watchdog stops everything after --lifetime seconds (default 3600) if stop never runs.
# stop stops the servers (SIGTERM, then SIGKILL after 30 s) and removes the directory.
set -eu

cmd=${1:-}
shift || true
state=""
lifetime=3600
while [ $# -gt 0 ]; do
    case "$1" in
    --dir) state=$2; shift 2 ;;
    --lifetime) lifetime=$2; shift 2 ;;
    *) echo "servers.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$state" ] || { echo "servers.sh: --dir is required" >&2; exit 2; }

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)

as_server() {
    if [ "$(id -u)" = 0 ]; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
    else
        "$@"
    fi
}

# spawn LOG COMMAND...: starts a server in the background, output to LOG, and records its pid.
# The command is backgrounded directly (not through a shell function, which would fork a
# subshell), and setpriv execs the server, so $! is the server's own pid.
spawn() {
    log=$1
    shift
    if [ "$(id -u)" = 0 ]; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@" </dev/null >>"$log" 2>&1 &
    else
        "$@" </dev/null >>"$log" 2>&1 &
    fi
    echo $! >>"$state/pids"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for NAME LOGFILE COMMAND...: polls COMMAND every 0.2 s for up to 60 s.
wait_for() {
    name=$1 log=$2
    shift 2
    i=0
    while [ $i -lt 300 ]; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.2 # polling a server's readiness: it offers nothing to block on
        i=$((i + 1))
    done
    echo "servers.sh: $name did not become ready within 60 s; its log ($log):" >&2
    tail -n 30 "$log" >&2 || true
    return 1
}

pids_kill() {
    [ -f "$state/pids" ] || return 0
    for p in $(cat "$state/pids"); do kill -TERM "$p" 2>/dev/null || true; done
    i=0
    while [ $i -lt 150 ]; do
        alive=""
        for p in $(cat "$state/pids"); do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [ -z "$alive" ] && break
        sleep 0.2 # waiting for processes we do not parent: no event to wait on
        i=$((i + 1))
    done
    for p in $(cat "$state/pids"); do kill -KILL "$p" 2>/dev/null || true; done
    rm -f "$state/pids"
}

stop() {
    pids_kill
    if [ -f "$state/watchdog" ]; then
        w=$(cat "$state/watchdog")
        rm -f "$state/watchdog" # first: the watchdog exits when it finds no file
        kill "$w" 2>/dev/null || true
    fi
    if [ -f "$state/env" ]; then
        tmp=$(sed -n 's/^SW_TEST_DB_TMP=//p' "$state/env")
        case "$tmp" in /tmp/sw-db.*) rm -rf "$tmp" ;; esac
        rm -f "$state/env"
    fi
}

start() {
    mkdir -p "$state"
    stop # a previous run that was never stopped
    tmp=$(mktemp -d /tmp/sw-db.XXXXXX)
    chmod 755 "$tmp"
    [ "$(id -u)" = 0 ] && chown nobody "$tmp"
    : >"$state/pids"

    # PostgreSQL
    pg_port=$(free_port)
    as_server "$PGBIN/initdb" -D "$tmp/pg" -U postgres -A trust --no-sync </dev/null >"$tmp/initdb.log" 2>&1 ||
        { echo "servers.sh: initdb failed:" >&2; tail -n 20 "$tmp/initdb.log" >&2; exit 1; }
    spawn "$tmp/pg.log" "$PGBIN/postgres" -D "$tmp/pg" -k "$tmp" -p "$pg_port" -h 127.0.0.1 -F \
        -c fsync=off -c shared_buffers=16MB -c max_connections=20

    # MariaDB
    my_port=$(free_port)
    as_server mariadb-install-db --no-defaults --datadir="$tmp/my" --auth-root-authentication-method=normal \
        --skip-test-db </dev/null >"$tmp/my-install.log" 2>&1 ||
        { echo "servers.sh: mariadb-install-db failed:" >&2; tail -n 20 "$tmp/my-install.log" >&2; exit 1; }
    spawn /dev/null mariadbd --no-defaults --datadir="$tmp/my" --socket="$tmp/my.sock" \
        --port="$my_port" --bind-address=127.0.0.1 --skip-grant-tables --pid-file="$tmp/my.pid" \
        --innodb-buffer-pool-size=16M --skip-log-bin --log-error="$tmp/my.log"

    # Redis
    redis_port=$(free_port)
    spawn /dev/null redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
        --unixsocket "$tmp/redis.sock" --dir "$tmp" --logfile "$tmp/redis.log"

    # Redis with a password (the AUTH tests): the password stays off the command line.
    redis_auth_port=$(free_port)
    redis_password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    (umask 077 && printf 'requirepass %s\n' "$redis_password" >"$tmp/redis-auth.conf")
    [ "$(id -u)" = 0 ] && chown nobody "$tmp/redis-auth.conf"
    spawn /dev/null redis-server "$tmp/redis-auth.conf" --port "$redis_auth_port" --bind 127.0.0.1 \
        --save '' --appendonly no --dir "$tmp" --logfile "$tmp/redis-auth.log"

    wait_for PostgreSQL "$tmp/pg.log" "$PGBIN/pg_isready" -q -h "$tmp" -p "$pg_port" || { stop; exit 1; }
    wait_for MariaDB "$tmp/my.log" mariadb-admin --no-defaults --socket="$tmp/my.sock" ping || { stop; exit 1; }
    wait_for Redis "$tmp/redis.log" sh -c "redis-cli -p $redis_port ping | grep -q PONG" || { stop; exit 1; }
    wait_for "Redis (requirepass)" "$tmp/redis-auth.log" \
        env REDISCLI_AUTH="$redis_password" sh -c "redis-cli -p $redis_auth_port ping | grep -q PONG" || { stop; exit 1; }

    "$PGBIN/psql" -X -q -h "$tmp" -p "$pg_port" -U postgres -d postgres -c 'CREATE DATABASE swtest' >/dev/null
    mariadb --no-defaults --socket="$tmp/my.sock" -e 'CREATE DATABASE swtest'

    cat >"$state/env" <<EOF
SW_TEST_DB_TMP=$tmp
SW_TEST_PG_SOCKDIR=$tmp
SW_TEST_PG_PORT=$pg_port
SW_TEST_MY_SOCKET=$tmp/my.sock
SW_TEST_MY_PORT=$my_port
SW_TEST_REDIS_PORT=$redis_port
SW_TEST_REDIS_SOCKET=$tmp/redis.sock
SW_TEST_REDIS_AUTH_PORT=$redis_auth_port
SW_TEST_REDIS_PASSWORD=$redis_password
EOF
    # Watchdog: a ctest run killed before the cleanup test must not leave servers behind.
    (
        sleep "$lifetime" &
        echo $! >"$state/watchdog"
        wait $! || true
        if [ -f "$state/watchdog" ]; then exec "$0" stop --dir "$state"; fi
    ) >/dev/null 2>&1 </dev/null &
    echo "servers.sh: PostgreSQL :$pg_port, MariaDB :$my_port, Redis :$redis_port in $tmp"
}

case "$cmd" in
start) start ;;
stop) stop ;;
*) echo "usage: servers.sh start|stop --dir STATE [--lifetime SECONDS]" >&2; exit 2 ;;
esac
