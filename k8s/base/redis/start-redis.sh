#!/bin/sh
# Writes the ACL file from REDIS_PASSWORD (only its SHA-256 goes to disk, and it never appears
# on a command line), then becomes redis-server, so SIGTERM reaches Redis and it exits cleanly.
set -eu
umask 077
hash=$(printf %s "$REDIS_PASSWORD" | sha256sum | cut -d' ' -f1)
cat > /run/redis/users.acl <<ACL
user default off
user clawray on #$hash ~clawray:* resetchannels +@all -@dangerous +info
ACL
exec redis-server /etc/redis/redis.conf
