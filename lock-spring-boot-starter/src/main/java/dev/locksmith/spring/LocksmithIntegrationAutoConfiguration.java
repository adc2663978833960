package dev.locksmith.spring;

import dev.locksmith.LockClient;
import dev.locksmith.spring.integration.LocksmithLockRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

/**
 * With {@code lock-spring-integration} and Spring Integration 7.x on the class path: a {@link
 * LocksmithLockRegistry} over the application's one {@link LockClient} (the starter's, from {@code
 * locksmith.*}), for {@code LockRegistryLeaderInitiator} and locked handlers. An application that
 * defines its own {@code LockRegistry} gets none from here. Spring Integration 6.x (Spring Boot
 * 3.5) has no {@code DistributedLock}, which this condition requires: there nothing is defined,
 * since {@code lock-spring-integration} is for 7.x.
 */
@AutoConfiguration(after = LocksmithAutoConfiguration.class)
@ConditionalOnClass(
    name = {
      "dev.locksmith.spring.integration.LocksmithLockRegistry",
      "org.springframework.integration.support.locks.DistributedLock"
    })
class LocksmithIntegrationAutoConfiguration {
  /** Made by Spring. */
  LocksmithIntegrationAutoConfiguration() {}

  /**
   * @param client the lock client bean
   * @return the registry, with the client's default lease and renewal
   */
  @Bean
  @ConditionalOnMissingBean(type = "org.springframework.integration.support.locks.LockRegistry")
  @ConditionalOnSingleCandidate(LockClient.class)
  LocksmithLockRegistry locksmithLockRegistry(LockClient client) {
    return new LocksmithLockRegistry(client);
  }
}
