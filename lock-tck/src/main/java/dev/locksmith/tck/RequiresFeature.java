package dev.locksmith.tck;

import dev.locksmith.Guarantees.Feature;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The feature every rule of a group needs, stated once on the group's interface: {@link
 * GroupFeatureCheck} skips each of its rules, at the start of the rule, when the backend does not
 * declare it, with the reason "rule N.M skipped: the backend does not declare FEATURE". A rule that
 * needs another feature as well asks for it itself ({@link KitRules#requireFeature}).
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
@interface RequiresFeature {
  /**
   * @return the feature the group's rules need
   */
  Feature value();
}
