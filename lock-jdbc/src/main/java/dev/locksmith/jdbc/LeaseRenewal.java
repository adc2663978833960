package dev.locksmith.jdbc;

import dev.locksmith.jdbc.LeaseTable.Due;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The renewal of a client's leases in {@link LeaseTable}: every lease in one transaction, one
 * UPDATE per distinct lease time and chunk of names.
 */
final class LeaseRenewal {
  /** Names per renewal statement: well below every driver's bind-parameter limit. */
  private static final int RENEW_CHUNK = 250;

  /** The table whose connections it borrows. */
  private final LeaseTable base;

  private final Dialect dialect;
  private final String table;

  LeaseRenewal(LeaseTable base, Dialect dialect, String table) {
    this.base = base;
    this.dialect = dialect;
    this.table = table;
  }

  /**
   * One run of {@link LeaseTable#renew}, in one transaction.
   *
   * @return the owner ids still ours, now renewed
   */
  Set<String> renewOnce(List<Due> leases) throws SQLException {
    Map<Long, List<Due>> byLease = new LinkedHashMap<>();
    for (Due d : leases) {
      byLease.computeIfAbsent(d.leaseMillis, k -> new ArrayList<>()).add(d);
    }
    Set<String> ours = new HashSet<>();
    try (Connection c = base.borrow()) {
      boolean auto = c.getAutoCommit();
      if (auto) {
        c.setAutoCommit(false);
      }
      try {
        for (Map.Entry<Long, List<Due>> group : byLease.entrySet()) {
          List<Due> all = group.getValue();
          for (int from = 0; from < all.size(); from += RENEW_CHUNK) {
            List<Due> chunk = all.subList(from, Math.min(all.size(), from + RENEW_CHUNK));
            renewChunk(c, group.getKey(), chunk, ours);
          }
        }
        c.commit();
      } catch (SQLException | RuntimeException e) {
        LeaseTable.rollbackQuietly(c);
        throw e;
      } finally {
        LeaseTable.restoreAutoCommit(c, auto);
      }
    }
    return ours;
  }

  private void renewChunk(Connection c, long leaseMillis, List<Due> chunk, Set<String> ours)
      throws SQLException {
    String in = placeholders(chunk.size());
    String where = " WHERE name IN (" + in + ") AND owner IN (" + in + ")";
    int updated;
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE " + table + " SET expires_at = " + dialect.nowMillis + " + ?" + where)) {
      int i = 1;
      ps.setLong(i++, leaseMillis);
      i = bind(ps, i, chunk);
      updated = ps.executeUpdate();
    }
    if (updated == chunk.size()) {
      chunk.forEach(d -> ours.add(d.owner));
      return;
    }
    // Some rows are no longer ours (taken after expiry, deleted): find out which.
    try (PreparedStatement ps = c.prepareStatement("SELECT owner FROM " + table + where)) {
      bind(ps, 1, chunk);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ours.add(rs.getString(1));
        }
      }
    }
  }

  private static int bind(PreparedStatement ps, int i, List<Due> chunk) throws SQLException {
    for (Due d : chunk) {
      ps.setString(i++, d.name);
    }
    for (Due d : chunk) {
      ps.setString(i++, d.owner);
    }
    return i;
  }

  private static String placeholders(int n) {
    StringBuilder sb = new StringBuilder(n * 3);
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "?" : ", ?");
    }
    return sb.toString();
  }
}
