package dev.locksmith.spring;

import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.shedlock.LocksmithLockProvider;
import java.util.List;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

/**
 * With {@code lock-shedlock} on the class path: a ShedLock {@link LockProvider} over the
 * application's one {@link LockClient} (the starter's, from {@code locksmith.*}), so
 * {@code @SchedulerLock} needs no bean of its own. An application that defines its own {@code
 * LockProvider} gets none from here.
 */
@AutoConfiguration(after = LocksmithAutoConfiguration.class)
@ConditionalOnClass(
    name = {
      "dev.locksmith.shedlock.LocksmithLockProvider",
      "net.javacrumbs.shedlock.core.LockProvider"
    })
class LocksmithShedLockAutoConfiguration {
  /** Made by Spring. */
  LocksmithShedLockAutoConfiguration() {}

  /**
   * @param client the lock client bean
   * @return the provider; ShedLock's {@code @EnableSchedulerLock} finds it by type
   * @throws LockConfigurationException if the backend of {@code locksmith.uri} cannot hold
   *     ShedLock's {@code lockAtMostFor}/{@code lockAtLeastFor}
   */
  @Bean
  @ConditionalOnMissingBean(LockProvider.class)
  @ConditionalOnSingleCandidate(LockClient.class)
  LocksmithLockProvider locksmithLockProvider(LockClient client) {
    try {
      return new LocksmithLockProvider(client);
    } catch (IllegalArgumentException e) {
      LockConfigurationException named =
          new LockConfigurationException(
              List.of(
                  "`locksmith.uri` was "
                      + client.config().uri()
                      + " but lock-shedlock is on the class path and ShedLock needs a backend that"
                      + " declares EXTEND and HOLD_AFTER_RELEASE ("
                      + e.getMessage()
                      + "); use such a backend, or define your own LockProvider bean"));
      named.initCause(e);
      throw named;
    }
  }
}
