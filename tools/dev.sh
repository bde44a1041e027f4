#!/usr/bin/env bash
# make dev: `wrangler dev "$@"` with .dev.vars read whole, and open access
# set, never inferred.
#
# wrangler.toml's [secrets] makes wrangler read .dev.vars for the names it
# declares only (its vars and API_TOKENS), so this passes every other line
# as a --var. API_TOKENS goes in a file of its own (--env-file), not on
# the command line. Without API_TOKENS or OPEN_ACCESS in .dev.vars, the
# Worker runs open because this says so (OPEN_ACCESS=true), and
# API_TOKENS is given empty, which the Worker reads as none, so wrangler
# does not warn that the secret is missing.
set -euo pipefail

args=()
tokens=""
open=""
if [[ -f .dev.vars ]]; then
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*=[[:space:]]*(.*)$ ]] || continue
    name=${BASH_REMATCH[1]}
    value=${BASH_REMATCH[2]}
    if [[ $value =~ ^\"(.*)\"$ || $value =~ ^\'(.*)\'$ ]]; then
      value=${BASH_REMATCH[1]}
    fi
    case $name in
    API_TOKENS) tokens=$value ;;
    OPEN_ACCESS) open=$value ;&
    *) args+=(--var "$name:$value") ;;
    esac
  done < .dev.vars
fi
if [[ -z $tokens && -z $open ]]; then
  echo "make dev: OPEN_ACCESS=true (no API_TOKENS in .dev.vars): the Worker takes orders from anyone who reaches it"
  args+=(--var OPEN_ACCESS:true)
fi

secrets=$(mktemp)
trap 'rm -f "$secrets"' EXIT
chmod 600 "$secrets"
printf 'API_TOKENS=%s\n' "$tokens" > "$secrets"
if [[ -n ${DEV_SH_PRINT:-} ]]; then
  # For its test: the command, without running it.
  printf '%s\n' wrangler dev "$@" --env-file "$secrets" "${args[@]}"
  exit
fi
wrangler dev "$@" --env-file "$secrets" "${args[@]}"
