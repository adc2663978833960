package dev.locksmith.docs.site;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.commonmark.Extension;
import org.commonmark.ext.gfm.tables.TablesExtension;
import org.commonmark.node.AbstractVisitor;
import org.commonmark.node.Code;
import org.commonmark.node.FencedCodeBlock;
import org.commonmark.node.Heading;
import org.commonmark.node.Image;
import org.commonmark.node.Link;
import org.commonmark.node.Node;
import org.commonmark.node.Paragraph;
import org.commonmark.node.Text;
import org.commonmark.parser.Parser;
import org.commonmark.renderer.html.HtmlRenderer;

/**
 * Renders the documentation site: the pages listed in {@code src/site-md/nav.txt} to {@code
 * target/site/*.html}, each with the same navigation.
 *
 * <p>A page's source is a Markdown file of {@code src/site-md}, or a file of the repository ({@code
 * repo:lock-tck/RULES.md}) shown as it is, or {@code built:PATH}: a file another step wrote into
 * the site before it (the API reference, {@code built:api/index.html}, by {@link ApiReference}),
 * which must be there and is linked as it is. In a page of {@code src/site-md}, a paragraph that is
 * only {@code {{sample:File#tag}}} becomes the Java code between {@code // tag::tag[]} and {@code
 * // end::tag[]} in {@code src/test/java/dev/locksmith/docs/samples/File.java} (a test that runs in
 * the build), and one that is only {@code {{include:path}}} becomes that repository file, its
 * headings one level down. A missing sample, tag or include fails the build.
 *
 * <p>Links are rewritten to the pages: a link to a file that is a page's source (or included in
 * one) points at that page; a link to a heading must find that heading. In the pages of {@code
 * src/site-md} any other relative link fails the build, but one to a file of the API reference; in
 * files of the repository shown as they are, a link to a file that is no page (a source file, a
 * script) is left as plain text, and a heading link that finds no heading points at the page.
 * Images referred to by a relative path are copied next to the pages.
 */
public final class SiteGenerator {
  private static final Pattern SAMPLE =
      Pattern.compile("\\{\\{sample:([A-Za-z0-9_]+)#([A-Za-z0-9_.-]+)}}");
  private static final Pattern INCLUDE = Pattern.compile("\\{\\{include:([^}]+)}}");
  private static final Pattern DIRECTIVE = Pattern.compile("\\{\\{[^}]*}}");

  /** One entry of the navigation. */
  record Page(String group, String slug, String title, String source) {
    String file() {
      return built() ? source.substring(BUILT.length()) : slug + ".html";
    }

    /** A file another step writes into the site (the API reference), linked as it is. */
    boolean built() {
      return source.startsWith(BUILT);
    }
  }

  private static final String BUILT = "built:";

  private final Path moduleDir;
  private final Path repoRoot;
  private final Path siteMd;
  private final Path samplesDir;
  private final Path outDir;
  private final List<Extension> extensions = List.of(TablesExtension.create());
  private final Parser parser = Parser.builder().extensions(extensions).build();

  /** Repository-relative source path (and included files) to the page that shows it. */
  private final Map<String, Page> pageOfSource = new HashMap<>();

  private final Map<Page, Node> documents = new LinkedHashMap<>();
  private final Map<Page, Set<String>> idsOfPage = new HashMap<>();
  private final Map<Node, String> headingIds = new IdentityHashMap<>();
  private final List<String> problems = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();

  /** A link waiting for every page's heading ids: its page, whether it must resolve, its target. */
  private record PendingFragment(Page from, boolean strict, Link link, Page target, String id) {}

  private final List<PendingFragment> pending = new ArrayList<>();

  public SiteGenerator(Path moduleDir) {
    this.moduleDir = moduleDir.toAbsolutePath().normalize();
    this.repoRoot = this.moduleDir.getParent();
    this.siteMd = this.moduleDir.resolve("src/site-md");
    this.samplesDir = this.moduleDir.resolve("src/test/java/dev/locksmith/docs/samples");
    this.outDir = this.moduleDir.resolve("target/site");
  }

  public Path outDir() {
    return outDir;
  }

  /** What the generator left as plain text or changed in the repository's own files. */
  public List<String> notes() {
    return List.copyOf(notes);
  }

  /**
   * Builds the site.
   *
   * @return the pages written, in navigation order
   * @throws IllegalStateException listing every problem (missing sample, tag, include, page or
   *     heading) if there is any; nothing is then left half-written as a success
   */
  public List<Page> build() {
    List<Page> pages = readNav();
    for (Page page : pages) {
      if (page.built()) {
        checkBuilt(page);
      } else {
        pageOfSource.put(sourcePath(page), page);
      }
    }
    for (Page page : pages) {
      if (!page.built()) {
        documents.put(page, parsePage(page));
      }
    }
    for (Page page : documents.keySet()) {
      collectHeadingIds(page, documents.get(page));
    }
    for (Map.Entry<Page, Node> e : documents.entrySet()) {
      resolveLinks(e.getKey(), e.getValue());
    }
    resolveFragments();
    if (!problems.isEmpty()) {
      throw new IllegalStateException(
          "the site has "
              + problems.size()
              + " problem(s):\n  - "
              + String.join("\n  - ", problems));
    }
    write(pages);
    return pages;
  }

  // ---- the navigation

  private List<Page> readNav() {
    List<Page> pages = new ArrayList<>();
    Set<String> slugs = new LinkedHashSet<>();
    for (String line : readLines(siteMd.resolve("nav.txt"))) {
      String trimmed = line.strip();
      if (trimmed.isEmpty() || trimmed.startsWith("#")) {
        continue;
      }
      String[] f = trimmed.split("\\s*\\|\\s*");
      if (f.length != 4) {
        throw new IllegalStateException("nav.txt: want 'group | slug | title | source': " + line);
      }
      if (!slugs.add(f[1])) {
        throw new IllegalStateException("nav.txt: slug " + f[1] + " given twice");
      }
      pages.add(new Page(f[0], f[1], f[2], f[3]));
    }
    if (pages.isEmpty() || !pages.get(0).slug().equals("index")) {
      throw new IllegalStateException("nav.txt: the first page must be 'index'");
    }
    return pages;
  }

  /**
   * A page written by another step must be there when the site is built: the API reference is
   * written by {@link ApiReference} first.
   */
  private void checkBuilt(Page page) {
    Path file = outDir.resolve(page.file()).normalize();
    if (!file.startsWith(outDir) || page.file().isBlank()) {
      problems.add(page.slug() + ": " + page.source() + " is not a file of the site");
    } else if (!Files.isRegularFile(file)) {
      problems.add(
          page.slug()
              + ": "
              + page.file()
              + " is missing from "
              + outDir
              + " (it is written before the site: ApiReference for api/)");
    } else {
      builtDirs.add(file.getParent());
    }
  }

  /** The directories of the pages other steps write; links into them are left as they are. */
  private final List<Path> builtDirs = new ArrayList<>();

  /** A file of a part of the site another step wrote (a class page of the API reference). */
  private boolean isBuiltFile(String path) {
    Path file = outDir.resolve(path).normalize();
    return builtDirs.stream().anyMatch(file::startsWith) && Files.isRegularFile(file);
  }

  private String sourcePath(Page page) {
    return page.source().startsWith("repo:")
        ? page.source().substring("repo:".length())
        : repoRoot.relativize(siteMd.resolve(page.source())).toString();
  }

  private boolean isOwnPage(Page page) {
    return !page.source().startsWith("repo:");
  }

  // ---- parsing, samples and includes

  private Node parsePage(Page page) {
    Path file = repoRoot.resolve(sourcePath(page));
    if (!Files.isRegularFile(file)) {
      problems.add(page.slug() + ": source " + file + " is missing");
      return parser.parse("");
    }
    Node doc = parser.parse(read(file));
    tagBase(doc, sourcePath(page));
    if (isOwnPage(page)) {
      expandDirectives(page, doc);
    }
    return doc;
  }

  /** Each node remembers the file it came from, so that relative links resolve against it. */
  private final Map<Node, String> baseOf = new IdentityHashMap<>();

  private void tagBase(Node root, String repoPath) {
    root.accept(
        new AbstractVisitor() {
          @Override
          public void visit(Link link) {
            baseOf.put(link, repoPath);
            visitChildren(link);
          }

          @Override
          public void visit(Image image) {
            baseOf.put(image, repoPath);
            visitChildren(image);
          }
        });
  }

  private void expandDirectives(Page page, Node doc) {
    List<Paragraph> paragraphs = new ArrayList<>();
    doc.accept(
        new AbstractVisitor() {
          @Override
          public void visit(Paragraph paragraph) {
            paragraphs.add(paragraph);
          }
        });
    for (Paragraph p : paragraphs) {
      String text = plainText(p).strip();
      Matcher sample = SAMPLE.matcher(text);
      Matcher include = INCLUDE.matcher(text);
      if (sample.matches()) {
        FencedCodeBlock code = new FencedCodeBlock();
        code.setInfo("java");
        code.setFenceCharacter("`");
        code.setOpeningFenceLength(3);
        code.setClosingFenceLength(3);
        code.setLiteral(sample(page, sample.group(1), sample.group(2)));
        p.insertBefore(code);
        p.unlink();
      } else if (include.matches()) {
        String path = include.group(1).strip();
        Path file = repoRoot.resolve(path).normalize();
        if (!file.startsWith(repoRoot) || !Files.isRegularFile(file)) {
          problems.add(page.slug() + ": included file " + path + " is missing");
          continue;
        }
        String repoPath = repoRoot.relativize(file).toString();
        Node included = parser.parse(read(file));
        tagBase(included, repoPath);
        pageOfSource.putIfAbsent(repoPath, page);
        Node child = included.getFirstChild();
        while (child != null) {
          Node next = child.getNext();
          if (child instanceof Heading h) {
            h.setLevel(Math.min(6, h.getLevel() + 1));
          }
          p.insertBefore(child);
          child = next;
        }
        p.unlink();
      } else if (DIRECTIVE.matcher(text).find()) {
        problems.add(page.slug() + ": unknown directive in '" + text + "'");
      }
    }
  }

  private String sample(Page page, String className, String tag) {
    Path file = samplesDir.resolve(className + ".java");
    if (!Files.isRegularFile(file)) {
      problems.add(page.slug() + ": sample file " + className + ".java is missing");
      return "// missing sample " + className + "#" + tag;
    }
    List<String> lines = readLines(file);
    String start = "// tag::" + tag + "[]";
    String end = "// end::" + tag + "[]";
    int from = -1;
    int to = -1;
    for (int i = 0; i < lines.size(); i++) {
      String l = lines.get(i).strip();
      if (l.equals(start) && from < 0) {
        from = i;
      } else if (l.equals(end) && from >= 0) {
        to = i;
        break;
      }
    }
    if (from < 0 || to < 0) {
      problems.add(
          page.slug() + ": tag '" + tag + "' not found (start and end) in " + className + ".java");
      return "// missing sample " + className + "#" + tag;
    }
    List<String> body = new ArrayList<>();
    for (String l : lines.subList(from + 1, to)) {
      String s = l.strip();
      if (!(s.startsWith("// tag::") || s.startsWith("// end::"))) {
        body.add(l);
      }
    }
    int indent = Integer.MAX_VALUE;
    for (String l : body) {
      if (!l.isBlank()) {
        indent = Math.min(indent, l.length() - l.stripLeading().length());
      }
    }
    if (body.stream().allMatch(String::isBlank)) {
      problems.add(page.slug() + ": tag '" + tag + "' in " + className + ".java is empty");
      return "";
    }
    StringBuilder out = new StringBuilder();
    for (String l : body) {
      out.append(l.isBlank() ? "" : l.substring(indent)).append('\n');
    }
    return out.toString();
  }

  // ---- headings and links

  private void collectHeadingIds(Page page, Node doc) {
    Set<String> ids = new LinkedHashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    doc.accept(
        new AbstractVisitor() {
          @Override
          public void visit(Heading heading) {
            String base = slug(plainText(heading));
            int n = seen.merge(base, 1, Integer::sum);
            String id = n == 1 ? base : base + "-" + (n - 1);
            headingIds.put(heading, id);
            ids.add(id);
          }
        });
    idsOfPage.put(page, ids);
  }

  /** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
  static String slug(String text) {
    String lower = text.strip().toLowerCase(Locale.ROOT);
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < lower.length(); i++) {
      char c = lower.charAt(i);
      if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
        s.append(c);
      } else if (c == ' ') {
        s.append('-');
      }
    }
    return s.length() == 0 ? "section" : s.toString();
  }

  private void resolveLinks(Page page, Node doc) {
    List<Link> links = new ArrayList<>();
    List<Image> images = new ArrayList<>();
    doc.accept(
        new AbstractVisitor() {
          @Override
          public void visit(Link link) {
            links.add(link);
            visitChildren(link);
          }

          @Override
          public void visit(Image image) {
            images.add(image);
          }
        });
    for (Link link : links) {
      resolveLink(page, link);
    }
    for (Image image : images) {
      resolveImage(page, image);
    }
  }

  private static boolean isExternal(String dest) {
    return dest.startsWith("http://") || dest.startsWith("https://") || dest.startsWith("mailto:");
  }

  private void resolveLink(Page page, Link link) {
    String dest = link.getDestination();
    String base = baseOf.getOrDefault(link, sourcePath(page));
    boolean strict = base.startsWith("lock-docs/src/site-md/");
    if (dest == null || dest.isEmpty() || isExternal(dest)) {
      return;
    }
    String path = dest;
    String fragment = null;
    int hash = dest.indexOf('#');
    if (hash >= 0) {
      path = dest.substring(0, hash);
      fragment = dest.substring(hash + 1);
    }
    Page target;
    if (path.isEmpty()) {
      // a heading of the file the link is written in: of this page, or of the page showing it
      target = pageOfSource.getOrDefault(base, page);
    } else {
      Path resolved = repoRoot.resolve(base).getParent().resolve(path).normalize();
      String repoPath =
          resolved.startsWith(repoRoot) ? repoRoot.relativize(resolved).toString() : "";
      target = pageOfSource.get(repoPath);
      if (target == null && Files.isDirectory(resolved)) {
        target = pageOfSource.get(repoRoot.relativize(resolved.resolve("README.md")).toString());
      }
      if (target == null && path.endsWith(".html")) {
        // a page of the site named by its output file (in src/site-md pages)
        String slug = path.substring(0, path.length() - ".html".length());
        target =
            documents.keySet().stream().filter(p -> p.slug().equals(slug)).findFirst().orElse(null);
      }
    }
    if (target == null && strict && !path.isEmpty() && isBuiltFile(path)) {
      return; // into the API reference: the file is there, the link stays as written
    }
    if (target == null) {
      if (strict) {
        problems.add(page.slug() + ": link to '" + dest + "' finds no page");
      } else {
        notes.add(page.slug() + ": link to '" + dest + "' (no page) left as text");
        unwrap(link);
      }
      return;
    }
    link.setDestination(target.file() + (fragment == null ? "" : "#" + fragment));
    if (fragment != null) {
      pending.add(new PendingFragment(page, strict, link, target, fragment));
    }
  }

  private void resolveFragments() {
    for (PendingFragment f : pending) {
      if (idsOfPage.getOrDefault(f.target(), Set.of()).contains(f.id())) {
        continue;
      }
      if (f.strict()) {
        problems.add(
            f.from().slug()
                + ": link to heading '#"
                + f.id()
                + "' of "
                + f.target().file()
                + " finds no heading");
      } else {
        notes.add(
            f.from().slug() + ": heading '#" + f.id() + "' not found; the link points at the page");
        f.link().setDestination(f.target().file());
      }
    }
  }

  private void resolveImage(Page page, Image image) {
    String dest = image.getDestination();
    if (dest == null || isExternal(dest)) {
      return;
    }
    String base = baseOf.getOrDefault(image, sourcePath(page));
    Path file = repoRoot.resolve(base).getParent().resolve(dest).normalize();
    if (!file.startsWith(repoRoot) || !Files.isRegularFile(file)) {
      problems.add(page.slug() + ": image '" + dest + "' is missing");
      return;
    }
    String name = repoRoot.relativize(file).toString().replace('/', '-');
    try {
      Files.createDirectories(outDir.resolve("assets"));
      Files.copy(file, outDir.resolve("assets").resolve(name), StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    image.setDestination("assets/" + name);
  }

  private static void unwrap(Link link) {
    Node child = link.getFirstChild();
    while (child != null) {
      Node next = child.getNext();
      link.insertBefore(child);
      child = next;
    }
    link.unlink();
  }

  static String plainText(Node node) {
    StringBuilder s = new StringBuilder();
    node.accept(
        new AbstractVisitor() {
          @Override
          public void visit(Text text) {
            s.append(text.getLiteral());
          }

          @Override
          public void visit(Code code) {
            s.append(code.getLiteral());
          }
        });
    return s.toString();
  }

  // ---- writing

  private void write(List<Page> pages) {
    HtmlRenderer renderer =
        HtmlRenderer.builder()
            .extensions(extensions)
            .attributeProviderFactory(
                context ->
                    (node, tagName, attributes) -> {
                      String id = headingIds.get(node);
                      if (id != null) {
                        attributes.put("id", id);
                      }
                    })
            .build();
    try {
      Files.createDirectories(outDir);
      Files.writeString(outDir.resolve("style.css"), css(), StandardCharsets.UTF_8);
      for (Page page : documents.keySet()) {
        String body = renderer.render(documents.get(page));
        Files.writeString(
            outDir.resolve(page.file()), html(pages, page, body), StandardCharsets.UTF_8);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String html(List<Page> pages, Page current, String body) {
    StringBuilder nav = new StringBuilder();
    String group = null;
    for (Page p : pages) {
      if (!p.group().equals(group)) {
        if (group != null) {
          nav.append("</ul>\n");
        }
        group = p.group();
        nav.append("<h2>").append(escape(group)).append("</h2>\n<ul>\n");
      }
      nav.append("<li><a href=\"")
          .append(p.file())
          .append('"')
          .append(p == current ? " class=\"current\" aria-current=\"page\"" : "")
          .append('>')
          .append(escape(p.title()))
          .append("</a></li>\n");
    }
    nav.append("</ul>\n");
    return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
        + escape(current.title())
        + " · Locksmith</title>\n<link rel=\"stylesheet\" href=\"style.css\">\n</head>\n<body>\n"
        + "<nav>\n<p class=\"brand\"><a href=\"index.html\">Locksmith</a></p>\n"
        + nav
        + "</nav>\n<main>\n"
        + body
        + "</main>\n</body>\n</html>\n";
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }

  private static String css() {
    return """
    body { margin: 0; display: flex; font: 16px/1.55 system-ui, sans-serif; color: #1d1d1f; }
    nav { flex: 0 0 15rem; padding: 1rem; background: #f4f4f6; min-height: 100vh; font-size: 0.9rem; }
    nav .brand a { font-weight: 700; font-size: 1.2rem; text-decoration: none; color: #7a2e0e; }
    nav h2 { font-size: 0.8rem; text-transform: uppercase; color: #666; margin: 1.2rem 0 0.3rem; }
    nav ul { list-style: none; margin: 0; padding: 0; }
    nav li a { display: block; padding: 0.15rem 0.4rem; color: #1d1d1f; text-decoration: none; border-radius: 4px; }
    nav li a.current { background: #7a2e0e; color: #fff; }
    main { flex: 1; max-width: 56rem; padding: 1rem 2.5rem 4rem; overflow-x: auto; }
    pre { background: #f6f8fa; padding: 0.8rem 1rem; overflow-x: auto; border-radius: 6px; font-size: 0.85rem; }
    code { font-family: ui-monospace, monospace; }
    table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
    th, td { border: 1px solid #d0d7de; padding: 0.3rem 0.6rem; vertical-align: top; }
    th { background: #f6f8fa; }
    .side-by-side { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; }
    img { max-width: 100%; }
    """;
  }

  // ---- files

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<String> readLines(Path file) {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Builds the site of the module in the working directory (Maven runs tests there). */
  public static void main(String[] args) {
    SiteGenerator generator = new SiteGenerator(Path.of(args.length > 0 ? args[0] : "."));
    List<Page> pages = generator.build();
    System.out.println(pages.size() + " pages in " + generator.outDir());
  }
}
