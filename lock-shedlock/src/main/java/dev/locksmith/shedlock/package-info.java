/**
 * ShedLock over Locksmith: {@link dev.locksmith.shedlock.LocksmithLockProvider} makes any Locksmith
 * backend that declares {@code EXTEND} and {@code HOLD_AFTER_RELEASE} a ShedLock {@code
 * LockProvider}, with lockAtMostFor and lockAtLeastFor enforced by the lock server.
 */
package dev.locksmith.shedlock;
