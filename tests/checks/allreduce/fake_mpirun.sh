#!/bin/sh
# Test stand-in for mpirun: drops the launcher options the all_reduce checks pass (applying -x
# VAR=VALUE to the environment) and runs the command once.
while [ $# -gt 0 ]; do
  case "$1" in
    --allow-run-as-root|--oversubscribe) shift ;;
    -np|-n|--map-by|--host|--bind-to) shift 2 ;;
    -x) export "${2?}"; shift 2 ;;
    *) break ;;
  esac
done
exec "$@"
