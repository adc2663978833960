package dev.locksmith.kotlin

import dev.locksmith.redis.RedisServerExtension
import org.junit.jupiter.api.extension.RegisterExtension

/**
 * The suspend functions on a real redis-server, where a grant, a withdrawal and a release are
 * network round trips. Without redis-server the class fails; it is never skipped.
 */
class RedisSuspendingLocksIT : SuspendingLocksContract() {
  companion object {
    @JvmField @RegisterExtension val REDIS: RedisServerExtension = RedisServerExtension.single("kotlin")
  }

  override fun uri(): String = REDIS.uri()
}
