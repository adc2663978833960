package dev.locksmith.spring;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The auto-configurations the starter's jar lists for Spring Boot. */
final class AutoConfigurationsListing {
  private AutoConfigurationsListing() {}

  /**
   * @return the class names in META-INF/spring/…AutoConfiguration.imports of the starter
   */
  static List<String> listed() throws IOException {
    List<String> all = new ArrayList<>();
    for (java.net.URL url :
        Collections.list(
            AutoConfigurationsListing.class
                .getClassLoader()
                .getResources(
                    "META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports"))) {
      try (InputStream in = url.openStream()) {
        for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
          if (!line.isBlank() && !line.startsWith("#")) {
            all.add(line.trim());
          }
        }
      }
    }
    return all;
  }
}
