/**
 * Spring Integration over Locksmith: {@link
 * dev.locksmith.spring.integration.LocksmithLockRegistry}, a {@code RenewableLockRegistry} (and
 * {@code ExpirableLockRegistry}) whose locks are Locksmith locks on any backend, with fencing
 * tokens for their holders; usable by {@code LockRegistryLeaderInitiator}, locked message handlers
 * and aggregators.
 */
package dev.locksmith.spring.integration;
