/**
 * Internal: for lock-redlock, not for applications; may change without notice in any release.
 *
 * <p>The pieces of the Redis lock protocol that the {@code redis://} backend and the {@code
 * redlock://} backend share: the connection to one server ({@link
 * dev.locksmith.redis.internal.RedisNode}), its settings ({@link
 * dev.locksmith.redis.internal.RedisSettings}), the Lua scripts ({@link
 * dev.locksmith.redis.internal.RedisScripts}), the key layout ({@link
 * dev.locksmith.redis.internal.RedisKeys}) and the release-notification subscriber ({@link
 * dev.locksmith.redis.internal.ReleaseSubscriber}). They are public only so that lock-redlock can
 * reuse them instead of copying them; applications use {@link dev.locksmith.Locks} and never these.
 */
package dev.locksmith.redis.internal;
