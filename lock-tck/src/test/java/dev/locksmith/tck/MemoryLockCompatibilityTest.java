package dev.locksmith.tck;

/**
 * The correct in-memory backend, written against the public SPI only, passes the whole kit: the
 * rules that catch the defects of {@link KitCatchesBrokenBackendsTest} do not fail a correct
 * backend written the way a third party would write one.
 */
class MemoryLockCompatibilityTest extends MemoryKit {}
