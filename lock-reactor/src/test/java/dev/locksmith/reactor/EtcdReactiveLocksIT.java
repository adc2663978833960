package dev.locksmith.reactor;

import dev.locksmith.etcd.EtcdServerExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link ReactiveLocks} on a real etcd server, where the client talks gRPC on Netty threads of its
 * own and waits on watches: the whole contract under BlockHound.
 */
class EtcdReactiveLocksIT extends ReactiveLocksContract {
  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("reactor");

  @Override
  String uri() {
    return ETCD.uri();
  }
}
