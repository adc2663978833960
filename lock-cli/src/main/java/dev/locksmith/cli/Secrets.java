package dev.locksmith.cli;

import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The secrets a lockctl command line may carry (the password of a backend URI, values under keys
 * that name a password, token or key), collected from the arguments, the {@code --config} file and
 * the {@code LOCKSMITH_*} environment before anything runs, and kept out of everything lockctl
 * prints. The library redacts what it parses; a password it misreads (one holding an unencoded
 * {@code /}, {@code ?}, {@code #} or {@code @}) or a value under a misspelt key can still reach its
 * messages, so lockctl replaces each secret wherever it appears.
 */
final class Secrets {
  static final String MASK = "****";

  /**
   * Keys whose values are taken for secrets, misspelt ones included ({@code pasword}, {@code pass},
   * {@code auth}).
   */
  private static final Pattern SECRET_KEY =
      Pattern.compile(
          "(?i)[a-z0-9_.\\-]*(pass|pasw|passw|pwd|psw|secret|token|cred|auth|key)[a-z0-9_.\\-]*");

  /**
   * {@code key=value} in a query, a {@code ;key=value} list or MySQL's {@code (key=value)} host
   * forms.
   */
  private static final Pattern KEY_VALUE = Pattern.compile("([A-Za-z0-9_.\\-]+)=([^&;)]*)");

  /** The same, for MySQL's {@code (host=h,password=p)} form, where a comma ends the value. */
  private static final Pattern KEY_VALUE_IN_LIST =
      Pattern.compile("([A-Za-z0-9_.\\-]+)=([^&;),]*)");

  /**
   * Shorter secrets are masked only as whole words, or every "a" of a one-letter password would go.
   */
  private static final int MIN_SUBSTRING = 4;

  private final List<String> secrets;

  private Secrets(Set<String> found) {
    List<String> list = new ArrayList<>(found);
    list.removeIf(String::isEmpty);
    list.sort(Comparator.comparingInt(String::length).reversed());
    this.secrets = List.copyOf(list);
  }

  /**
   * @return no secrets: text passes unchanged
   */
  static Secrets none() {
    return new Secrets(Set.of());
  }

  /**
   * @param argv the whole command line
   * @param env the environment, for {@code LOCKSMITH_URI} and {@code LOCKSMITH_*} settings
   * @param system the system properties, for {@code locksmith.*}
   * @return every secret found in them and in the file of {@code --config FILE}
   */
  static Secrets of(List<String> argv, Map<String, String> env, Properties system) {
    Set<String> found = new LinkedHashSet<>();
    for (int i = 0; i < argv.size(); i++) {
      String arg = argv.get(i);
      collect(arg, found);
      if (arg.equals("--config") && i + 1 < argv.size()) {
        collectFile(argv.get(i + 1), found);
      } else if (arg.startsWith("--config=")) {
        collectFile(arg.substring("--config=".length()), found);
      }
    }
    env.forEach((k, v) -> collectSetting(k, v, "LOCKSMITH_", found));
    system
        .stringPropertyNames()
        .forEach(k -> collectSetting(k, system.getProperty(k), "locksmith.", found));
    return new Secrets(found);
  }

  private static void collectFile(String file, Set<String> found) {
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(Path.of(file))) {
      p.load(in);
    } catch (IOException | RuntimeException e) {
      return; // the command reports an unreadable file itself
    }
    p.stringPropertyNames().forEach(k -> collectSetting(k, p.getProperty(k), "locksmith.", found));
  }

  private static void collectSetting(String key, String value, String prefix, Set<String> found) {
    if (value == null || !key.regionMatches(true, 0, prefix, 0, prefix.length())) {
      return;
    }
    collect(value, found);
    if (SECRET_KEY.matcher(key.substring(prefix.length())).matches()) {
      addWithDecoded(value, found);
    }
  }

  /**
   * Adds the secrets in one text that may hold a URI: its userinfo password and values under secret
   * keys.
   */
  private static void collect(String text, Set<String> found) {
    String password = password(text);
    if (password != null) {
      addWithDecoded(password, found);
    }
    for (Pattern p : List.of(KEY_VALUE, KEY_VALUE_IN_LIST)) {
      Matcher m = p.matcher(text);
      while (m.find()) {
        if (SECRET_KEY.matcher(m.group(1)).matches()) {
          addWithDecoded(m.group(2), found);
        }
      }
    }
  }

  private static void addWithDecoded(String secret, Set<String> found) {
    found.add(secret);
    found.add(decode(secret));
  }

  static String decode(String s) {
    try {
      return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return s;
    }
  }

  /**
   * Reads the password of {@code scheme://user:password@host…} as a person wrote it: the userinfo
   * runs to the last {@code @}, so a password may hold {@code /}, {@code ?}, {@code #} or {@code @}
   * unencoded. Reading too much is safe here: it is only ever hidden.
   *
   * @param uri a text that may be a URI
   * @return the password as written (not decoded), or null if there is none
   */
  static String password(String uri) {
    int start = uri.indexOf("//");
    int at = uri.lastIndexOf('@');
    if (start < 0 || at < start) {
      return null;
    }
    String userinfo = uri.substring(start + 2, at);
    int colon = userinfo.indexOf(':');
    return colon < 0 ? null : userinfo.substring(colon + 1);
  }

  /**
   * @param uri a backend URI as given
   * @return the URI to show: its password and every value under a secret key replaced by {@link
   *     #MASK}
   */
  static String display(String uri) {
    String s = uri;
    String password = password(s);
    if (password != null) {
      int at = s.lastIndexOf('@');
      s = s.substring(0, at - password.length()) + MASK + s.substring(at);
    }
    for (Pattern p : List.of(KEY_VALUE, KEY_VALUE_IN_LIST)) {
      Matcher m = p.matcher(s);
      StringBuilder b = new StringBuilder();
      while (m.find()) {
        String replacement =
            SECRET_KEY.matcher(m.group(1)).matches() && !m.group(2).isEmpty()
                ? m.group(1) + "=" + MASK
                : m.group();
        m.appendReplacement(b, Matcher.quoteReplacement(replacement));
      }
      m.appendTail(b);
      s = b.toString();
    }
    return s;
  }

  /**
   * @param text any text lockctl is about to print, may be null
   * @return the text with every known secret replaced by {@link #MASK}
   */
  String scrub(String text) {
    if (text == null || secrets.isEmpty()) {
      return text;
    }
    String s = text;
    for (String secret : secrets) {
      if (secret.length() >= MIN_SUBSTRING) {
        s = s.replace(secret, MASK);
      } else {
        s =
            s.replaceAll(
                "(?<![\\p{L}\\p{N}])" + Pattern.quote(secret) + "(?![\\p{L}\\p{N}])",
                Matcher.quoteReplacement(MASK));
      }
    }
    return s;
  }

  /**
   * @param target where the text goes
   * @return a stream that passes whole lines to {@code target}, each scrubbed, and flushes it at
   *     each line; closing it writes an unfinished last line
   */
  PrintStream scrubbing(PrintStream target) {
    return new PrintStream(new LineScrubber(target), true, StandardCharsets.UTF_8);
  }

  /**
   * Holds bytes until a line ends (or a flush), so that a secret is scrubbed whole, never split
   * across writes.
   */
  private final class LineScrubber extends FilterOutputStream {
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();

    LineScrubber(OutputStream target) {
      super(target);
    }

    @Override
    public void write(int b) throws IOException {
      line.write(b);
      if (b == '\n') {
        emit();
      }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      for (int i = off; i < off + len; i++) {
        write(b[i]);
      }
    }

    /**
     * Flushes what is complete: a line cut short would let a secret split across two writes pass.
     */
    @Override
    public void flush() throws IOException {
      out.flush();
    }

    /** Writes the last, unfinished line too. */
    @Override
    public void close() throws IOException {
      emit();
      super.close();
    }

    private void emit() throws IOException {
      if (line.size() > 0) {
        out.write(scrub(line.toString(StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
        line.reset();
      }
      out.flush();
    }
  }
}
