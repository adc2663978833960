package dev.locksmith.spring;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.spi.Durations;
import java.lang.reflect.Array;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.WildcardType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.KotlinDetector;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.ClassUtils;

/** One {@link Locked} method, parsed and checked once: what the advice does on each call. */
final class LockedOperation {
  private static final SpelExpressionParser PARSER = new SpelExpressionParser();
  static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();

  private static final String MONO = "reactor.core.publisher.Mono";
  private static final String FLUX = "reactor.core.publisher.Flux";
  private static final String REACTIVE_LOCKS = "dev.locksmith.reactor.ReactiveLocks";

  /** With it, Spring calls a suspend function as a publisher that its proxy awaits. */
  private static final String COROUTINES_REACTOR = "kotlinx.coroutines.reactor.MonoKt";

  /** Spring calls a suspend function through Kotlin reflection. */
  private static final String KOTLIN_REFLECT = "kotlin.reflect.full.KCallables";

  enum Returns {
    VOID,
    OPTIONAL,
    FUTURE,
    MONO,
    FLUX,
    /** A Kotlin {@code suspend} function: held as a {@code Mono} is, until it returns. */
    SUSPEND,
    PRIMITIVE,
    OTHER
  }

  final Method method;
  final Class<?> targetClass;
  final String where;
  final String name;
  final String keySource;
  final Expression key;
  final Duration lease;
  final Duration wait;
  final Boolean renew;
  final Boolean reentrant;
  final Locked.OnBusy onBusy;
  final String client;
  final Method fallback;
  final Returns returns;
  final int[] leaseParams;

  /** How many of the method's parameters the key sees: all but a suspend function's last. */
  private final int keyArgs;

  private volatile LockOptions options;

  private LockedOperation(Method method, Class<?> targetClass, Locked a, List<String> problems) {
    this.method = method;
    this.targetClass = targetClass;
    this.where = targetClass.getName() + "." + method.getName() + "(" + params(method) + ")";
    this.name = a.name();
    if (name.isEmpty()) {
      problems.add("`name` was '' but it must be the lock's name (or prefix), such as \"pay\"");
    }
    int mod = method.getModifiers();
    if (Modifier.isPrivate(mod) || Modifier.isFinal(mod) || Modifier.isStatic(mod)) {
      problems.add(
          "the method is "
              + (Modifier.isPrivate(mod) ? "private" : Modifier.isFinal(mod) ? "final" : "static")
              + ", so no proxy can intercept it and it would run without the lock; make it public"
              + " (or protected) and not final or static");
    }
    this.keySource = a.key();
    // a suspend function's last parameter is its continuation, not an argument of the caller's
    this.keyArgs =
        method.getParameterCount() - (KotlinDetector.isSuspendingFunction(method) ? 1 : 0);
    this.key = keySource.isEmpty() ? null : parseKey(method, keyArgs, keySource, problems);
    this.lease =
        a.lease().isEmpty()
            ? null
            : duration("lease", a.lease(), LockOptions.MIN_LEASE, LockOptions.MAX_LEASE, problems);
    this.wait = duration("waitFor", a.waitFor(), Duration.ZERO, Duration.ofDays(365), problems);
    this.renew = bool("renew", a.renew(), problems);
    this.reentrant = bool("reentrant", a.reentrant(), problems);
    this.onBusy = a.onBusy();
    this.client = a.client();
    this.returns = returns(method, problems);
    if (onBusy == Locked.OnBusy.SKIP
        && returns == Returns.SUSPEND
        && !suspendMayReturnNull(method)) {
      problems.add(
          "onBusy = SKIP returns null, but the suspend function's result type is not nullable;"
              + " make it nullable (T?) or Unit, or use THROW or FALLBACK");
    }
    if (onBusy == Locked.OnBusy.SKIP && returns == Returns.PRIMITIVE) {
      problems.add(
          "onBusy = SKIP returns null, but the method returns "
              + method.getReturnType()
              + "; return a wrapper type or Optional, or use THROW or FALLBACK");
    }
    this.fallback = fallback(method, targetClass, a, problems);
    List<Integer> leases = new ArrayList<>();
    Class<?>[] types = method.getParameterTypes();
    for (int i = 0; i < types.length; i++) {
      if (types[i] == Lease.class) {
        leases.add(i);
      }
    }
    this.leaseParams = leases.stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * @return the operation
   * @throws IllegalStateException naming the method and listing every problem of its annotation
   */
  static LockedOperation of(Method method, Class<?> targetClass, Locked a) {
    List<String> problems = new ArrayList<>();
    LockedOperation op = new LockedOperation(method, targetClass, a, problems);
    if (!problems.isEmpty()) {
      throw new IllegalStateException(
          "@Locked on " + op.where + " is not valid: " + String.join("; ", problems));
    }
    return op;
  }

  private static String params(Method m) {
    StringBuilder b = new StringBuilder();
    for (Class<?> t : m.getParameterTypes()) {
      b.append(b.length() == 0 ? "" : ", ").append(t.getSimpleName());
    }
    return b.toString();
  }

  private static Expression parseKey(
      Method method, int args, String source, List<String> problems) {
    Expression e;
    try {
      e = PARSER.parseExpression(source);
    } catch (ParseException ex) {
      problems.add(
          "`key` was '"
              + source
              + "' but it is not a valid SpEL expression ("
              + ex.getSimpleMessage()
              + "); write a literal key as a quoted string, such as \"'room#5'\"");
      return null;
    }
    String[] names = NAMES.getParameterNames(method);
    Set<String> known = new HashSet<>(List.of("root", "this"));
    for (int i = 0; i < args; i++) {
      known.add("p" + i);
      known.add("a" + i);
      if (names != null && i < names.length) {
        known.add(names[i]);
      }
    }
    Set<String> unknown = new HashSet<>();
    if (e instanceof SpelExpression spel) {
      collectVariables(spel.getAST(), known, unknown);
    }
    if (!unknown.isEmpty()) {
      problems.add(
          "`key` was '"
              + source
              + "' but it uses "
              + unknown
              + ", which "
              + (unknown.size() == 1 ? "is" : "are")
              + " not an argument of the method; arguments are "
              + (names == null ? "#p0.. (compile with -parameters to use names)" : List.of(names))
              + ", plus #root.method, #root.args, #root.target");
    }
    return e;
  }

  private static void collectVariables(SpelNode node, Set<String> known, Set<String> unknown) {
    if (node instanceof VariableReference) {
      String v = node.toStringAST().substring(1);
      if (!known.contains(v)) {
        unknown.add("#" + v);
      }
    }
    for (int i = 0; i < node.getChildCount(); i++) {
      collectVariables(node.getChild(i), known, unknown);
    }
  }

  private static Duration duration(
      String attr, String text, Duration min, Duration max, List<String> problems) {
    try {
      Duration d = text.equals("0") ? Duration.ZERO : Durations.parse(text);
      if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
        problems.add(
            "`"
                + attr
                + "` was '"
                + text
                + "' but it must be from "
                + Durations.format(min)
                + " to "
                + Durations.format(max));
      }
      return d;
    } catch (IllegalArgumentException e) {
      problems.add(
          "`" + attr + "` was '" + text + "' but it must be a duration such as 500ms, 5s or 1m");
      return Duration.ZERO;
    }
  }

  private static Boolean bool(String attr, String text, List<String> problems) {
    if (text.isEmpty()) {
      return null;
    }
    if (text.equals("true") || text.equals("false")) {
      return Boolean.valueOf(text);
    }
    problems.add(
        "`"
            + attr
            + "` was '"
            + text
            + "' but it must be true, false or empty (the client's default)");
    return null;
  }

  private static Returns returns(Method method, List<String> problems) {
    if (KotlinDetector.isSuspendingFunction(method)) {
      return suspending(method, problems);
    }
    Class<?> r = method.getReturnType();
    if (r == void.class) {
      return Returns.VOID;
    }
    if (r.isPrimitive()) {
      return Returns.PRIMITIVE;
    }
    if (r == Optional.class) {
      return Returns.OPTIONAL;
    }
    if (r.getName().equals(MONO) || r.getName().equals(FLUX)) {
      if (!ClassUtils.isPresent(REACTIVE_LOCKS, method.getDeclaringClass().getClassLoader())) {
        problems.add(
            "it returns "
                + r.getName()
                + ", held from subscription until the publisher ends only with"
                + " dev.locksmith:lock-reactor on the classpath; add it, or return"
                + " CompletableFuture or a plain value");
        return Returns.OTHER;
      }
      return r.getName().equals(MONO) ? Returns.MONO : Returns.FLUX;
    }
    if (isReactive(r)) {
      problems.add(
          "it returns "
              + r.getName()
              + ", a reactive type other than Mono and Flux: the lock would be released when the"
              + " publisher is returned, before its work runs; return Mono or Flux (with"
              + " dev.locksmith:lock-reactor), CompletableFuture or a plain value");
      return Returns.OTHER;
    }
    if (CompletionStage.class.isAssignableFrom(r)) {
      if (!r.isAssignableFrom(java.util.concurrent.CompletableFuture.class)) {
        problems.add(
            "it returns "
                + r.getName()
                + "; only CompletableFuture and CompletionStage are held until they complete");
      }
      return Returns.FUTURE;
    }
    if (Future.class.isAssignableFrom(r)) {
      problems.add(
          "it returns "
              + r.getName()
              + ", whose completion cannot be awaited without blocking: the lock would be"
              + " released before the work ends; return CompletableFuture");
      return Returns.OTHER;
    }
    return Returns.OTHER;
  }

  /**
   * A Kotlin {@code suspend} function. Spring calls it (and its fallback) as a {@code Mono} that
   * its proxy awaits in the caller's coroutine when kotlinx-coroutines-reactor is on the classpath,
   * so the lock is held from that subscription until the function returns, throws or is cancelled.
   * Without it, the proxy would see the function return at its first suspension, with the work not
   * done: refused.
   */
  private static Returns suspending(Method method, List<String> problems) {
    ClassLoader loader = method.getDeclaringClass().getClassLoader();
    List<String> missing = new ArrayList<>();
    if (!ClassUtils.isPresent(COROUTINES_REACTOR, loader)) {
      missing.add("org.jetbrains.kotlinx:kotlinx-coroutines-reactor");
    }
    if (!ClassUtils.isPresent(KOTLIN_REFLECT, loader)) {
      missing.add("org.jetbrains.kotlin:kotlin-reflect");
    }
    if (!ClassUtils.isPresent(REACTIVE_LOCKS, loader)) {
      missing.add("dev.locksmith:lock-reactor");
    }
    if (!missing.isEmpty()) {
      problems.add(
          "it is a Kotlin suspend function, held until it returns only with "
              + String.join(" and ", missing)
              + " on the classpath (without them the lock would be released at the function's first"
              + " suspension, before its work is done); add them, or make it a plain function");
      return Returns.OTHER;
    }
    String result = suspendResult(method);
    if (result.startsWith("kotlinx.coroutines.flow.")
        || result.equals(MONO)
        || result.equals(FLUX)) {
      problems.add(
          "it is a Kotlin suspend function returning "
              + result
              + ": the lock would be held until the stream is returned, not until it is consumed;"
              + " return the values themselves, or lock inside the stream (lock-kotlin's"
              + " lockedBy/flowWithLock)");
      return Returns.OTHER;
    }
    return Returns.SUSPEND;
  }

  /**
   * @return whether a suspend function's Kotlin result type is nullable or Unit, read through
   *     kotlin-reflect (present: {@link #suspending} requires it)
   */
  private static boolean suspendMayReturnNull(Method method) {
    try {
      ClassLoader loader = method.getDeclaringClass().getClassLoader();
      Object function =
          Class.forName("kotlin.reflect.jvm.ReflectJvmMapping", true, loader)
              .getMethod("getKotlinFunction", Method.class)
              .invoke(null, method);
      if (function == null) {
        return true;
      }
      Object type =
          Class.forName("kotlin.reflect.KCallable", true, loader)
              .getMethod("getReturnType")
              .invoke(function);
      Class<?> kType = Class.forName("kotlin.reflect.KType", true, loader);
      if ((boolean) kType.getMethod("isMarkedNullable").invoke(type)) {
        return true;
      }
      Object classifier = kType.getMethod("getClassifier").invoke(type);
      return String.valueOf(classifier).equals("class kotlin.Unit");
    } catch (ReflectiveOperationException | LinkageError e) {
      return true; // cannot tell: not refused
    }
  }

  /**
   * @return the Kotlin result type of a suspend function, read from its continuation parameter
   *     ({@code Continuation<? super T>}), or "" when it cannot be read
   */
  private static String suspendResult(Method method) {
    Type[] params = method.getGenericParameterTypes();
    if (params.length == 0 || !(params[params.length - 1] instanceof ParameterizedType p)) {
      return "";
    }
    Type t = p.getActualTypeArguments()[0];
    if (t instanceof WildcardType w) {
      Type[] lower = w.getLowerBounds();
      t = lower.length > 0 ? lower[0] : w.getUpperBounds()[0];
    }
    if (t instanceof ParameterizedType pt) {
      t = pt.getRawType();
    }
    return t instanceof Class<?> c ? c.getName() : "";
  }

  private static boolean isReactive(Class<?> type) {
    for (Class<?> c : ClassUtils.getAllInterfacesForClassAsSet(type)) {
      if (c.getName().equals("org.reactivestreams.Publisher")
          || c.getName().equals("java.util.concurrent.Flow$Publisher")) {
        return true;
      }
    }
    return type.getName().equals("org.reactivestreams.Publisher")
        || type.getName().startsWith("kotlinx.coroutines.flow.");
  }

  private static Method fallback(
      Method method, Class<?> targetClass, Locked a, List<String> problems) {
    if (a.onBusy() != Locked.OnBusy.FALLBACK) {
      if (!a.fallback().isEmpty()) {
        problems.add(
            "`fallback` was '"
                + a.fallback()
                + "' but onBusy is "
                + a.onBusy()
                + "; set onBusy = FALLBACK or remove it");
      }
      return null;
    }
    if (a.fallback().isEmpty()) {
      problems.add(
          "onBusy = FALLBACK but `fallback` was ''; name a method of "
              + targetClass.getSimpleName()
              + " with parameters ("
              + params(method)
              + ")");
      return null;
    }
    Method f =
        ClassUtils.getMethodIfAvailable(targetClass, a.fallback(), method.getParameterTypes());
    if (f == null) {
      problems.add(
          "`fallback` was '"
              + a.fallback()
              + "' but "
              + targetClass.getSimpleName()
              + " has no method "
              + a.fallback()
              + "("
              + params(method)
              + ")");
      return null;
    }
    if (!ClassUtils.isAssignable(method.getReturnType(), f.getReturnType())) {
      problems.add(
          "`fallback` '"
              + a.fallback()
              + "' returns "
              + f.getReturnType().getName()
              + " but the method returns "
              + method.getReturnType().getName());
    }
    f.setAccessible(true);
    return f;
  }

  /**
   * The lock names of one call: {@code name:key}, or {@code name} without a key; one name per
   * element when the key is a collection or an array.
   *
   * @param names the names, in the key's order (at least one)
   * @param set whether the key was a collection or an array, locked through {@code
   *     LockClient.locks}
   */
  record Names(List<String> names, boolean set) {
    /**
     * @return the one lock name of a key that is no collection
     */
    String single() {
      return names.get(0);
    }
  }

  /**
   * @return the lock names for this call: one, or one per element of a collection or array key
   * @throws IllegalArgumentException if the key (or an element of it) is null or empty, a
   *     collection key is empty or holds more than {@link LockClient#MAX_NAMES_PER_SET} names, or
   *     the expression fails for these arguments (naming the method and the expression)
   */
  Names lockNames(Object target, Object[] args, BeanResolver beans) {
    if (key == null) {
      return new Names(List.of(name), false);
    }
    if (args.length > keyArgs) { // a suspend function's continuation: not for the key
      args = java.util.Arrays.copyOf(args, keyArgs);
    }
    LockedRoot root = new LockedRoot(method, args, target, targetClass);
    MethodBasedEvaluationContext ctx = new MethodBasedEvaluationContext(root, method, args, NAMES);
    if (beans != null) {
      ctx.setBeanResolver(beans);
    }
    Object value;
    try {
      value = key.getValue(ctx);
    } catch (org.springframework.expression.EvaluationException e) {
      throw new IllegalArgumentException(
          "@Locked key '"
              + keySource
              + "' of "
              + targetClass.getName()
              + "#"
              + method.getName()
              + " ("
              + where
              + ") failed for this call: "
              + e.getMessage()
              + "; check the expression and the arguments of this call",
          e);
    }
    List<Object> elements = elements(value);
    if (elements == null) {
      return new Names(List.of(name + ":" + keyText(value, -1)), false);
    }
    if (elements.isEmpty()) {
      throw new IllegalArgumentException(
          "@Locked key '"
              + keySource
              + "' of "
              + where
              + " evaluated to an empty "
              + (value.getClass().isArray() ? "array" : "collection")
              + " but a collection key must hold 1 to "
              + LockClient.MAX_NAMES_PER_SET
              + " keys, one lock each; check the arguments of this call");
    }
    Set<String> distinct = new LinkedHashSet<>();
    for (int i = 0; i < elements.size(); i++) {
      distinct.add(name + ":" + keyText(elements.get(i), i));
    }
    if (distinct.size() > LockClient.MAX_NAMES_PER_SET) {
      throw new IllegalArgumentException(
          "@Locked key '"
              + keySource
              + "' of "
              + where
              + " evaluated to "
              + distinct.size()
              + " distinct keys but a collection key must hold 1 to "
              + LockClient.MAX_NAMES_PER_SET
              + " keys, one lock each; lock fewer at once");
    }
    return new Names(List.copyOf(distinct), true);
  }

  /**
   * @return the elements of a collection or array key, in its order; null for any other value
   */
  private static List<Object> elements(Object value) {
    if (value instanceof Collection<?> c) {
      return new ArrayList<>(c);
    }
    if (value != null && value.getClass().isArray()) {
      int n = Array.getLength(value);
      List<Object> all = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        all.add(Array.get(value, i));
      }
      return all;
    }
    return null;
  }

  /**
   * @param index the element's index in a collection key, or -1 for the key itself
   * @return the key's text
   * @throws IllegalArgumentException if it is null or empty
   */
  private String keyText(Object value, int index) {
    String text = value == null ? null : value.toString();
    if (text == null || text.isEmpty()) {
      throw new IllegalArgumentException(
          "@Locked key '"
              + keySource
              + "' of "
              + where
              + (index < 0
                  ? " evaluated to "
                  : " evaluated to a collection whose element " + index + " is ")
              + (text == null ? "null" : "''")
              + " but "
              + (index < 0 ? "it" : "each element")
              + " must be a non-empty lock key; check the arguments of this call");
    }
    return text;
  }

  LockOptions options(LockOptions defaults) {
    LockOptions o = options;
    if (o == null) {
      LockOptions.Builder b = defaults.toBuilder();
      if (lease != null) {
        b.lease(lease);
      }
      if (renew != null) {
        b.autoRenew(renew);
      }
      if (reentrant != null) {
        b.reentrant(reentrant);
      }
      o = b.build();
      options = o;
    }
    return o;
  }
}
