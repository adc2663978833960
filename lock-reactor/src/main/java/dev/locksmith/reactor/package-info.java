/**
 * Locksmith for Project Reactor: {@link dev.locksmith.reactor.ReactiveLocks} acquires locks as
 * {@link reactor.core.publisher.Mono}s and runs publishers while a lock is held, over the public
 * API of any {@link dev.locksmith.LockClient}.
 */
package dev.locksmith.reactor;
