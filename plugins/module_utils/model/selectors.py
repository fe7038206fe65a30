# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Label selectors: whether one selects a set of labels, and the text the API's list calls take."""

from __future__ import annotations


def expression_matches(expression, labels):
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise ValueError("unknown label selector operator %s" % operator)


def node_requirement_matches(requirement, values):
    """Whether a NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) holds for ``values``
    (a node's labels, or its fields for matchFields)."""
    if requirement["operator"] in ("Gt", "Lt"):
        key = requirement["key"]
        try:
            difference = int(values[key]) - int((requirement.get("values") or [""])[0])
        except (KeyError, ValueError):
            return False
        return difference > 0 if requirement["operator"] == "Gt" else difference < 0
    return expression_matches(requirement, values)


def node_selector_term_matches(term, labels, fields):
    """Whether a NodeSelectorTerm selects a node with ``labels`` and ``fields`` ({"metadata.name": ...});
    an empty term selects nothing, as in the scheduler."""
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False
    return all(node_requirement_matches(requirement, labels) for requirement in expressions) and \
        all(node_requirement_matches(requirement, fields) for requirement in field_expressions)


def selector_matches(selector, labels):
    """Whether a metav1.LabelSelector (matchLabels, matchExpressions) selects ``labels``.

    An empty selector selects everything, as it does in a PodDisruptionBudget.
    """
    selector = selector or {}
    labels = labels or {}
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    return all(expression_matches(expression, labels) for expression in selector.get("matchExpressions") or [])


def labels_match(wanted, labels):
    """Whether ``labels`` hold every key and value of ``wanted`` (a nodeSelector, a ReplicationController's
    selector)."""
    labels = labels or {}
    return all(labels.get(key) == value for key, value in (wanted or {}).items())


def selector_text(selector):
    """The label selector text of a metav1.LabelSelector, matchExpressions included:
    "app=web,tier in (a,b),!legacy"; "" selects everything."""
    selector = selector or {}
    parts = ["%s=%s" % item for item in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        operator = expression["operator"]
        if operator in ("In", "NotIn"):
            parts.append("%s %s (%s)" % (expression["key"], operator.lower(), ",".join(expression.get("values") or [])))
        elif operator == "Exists":
            parts.append(expression["key"])
        elif operator == "DoesNotExist":
            parts.append("!" + expression["key"])
        else:
            raise ValueError("unknown label selector operator %s" % operator)
    return ",".join(parts)


def labels_text(labels):
    """The label selector text ("a=1,b=2") that selects exactly ``labels``; "" for none."""
    return selector_text({"matchLabels": labels or {}})
