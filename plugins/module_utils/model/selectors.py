# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Label selectors: whether one selects a set of labels, and the text the API's list calls take."""

from __future__ import annotations

import re


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


def index_label(selector):
    """One (key, value) that all labels ``selector`` selects hold (the first of its matchLabels), by which
    indexes look up what it may select; None when it has no matchLabels."""
    match_labels = (selector or {}).get("matchLabels") or {}
    return min(match_labels.items()) if match_labels else None


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


# What the API server accepts, as in k8s.io/apimachinery (validation and labels/selector.go).
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SYMBOLS = ("!=", "==", "=", "!", "(", ")", ",", "<", ">")
_OPERATORS = ("=", "==", "!=", "in", "notin", "<", ">")
_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")


def label_key_error(key):
    """Why ``key`` is not a label key ("app", "karpenter.sh/nodepool"), or None."""
    if not isinstance(key, str) or not key:
        return "a label key cannot be empty"
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "the prefix of the label key %s is not a DNS subdomain (like karpenter.sh)" % key
    if len(name) > 63 or not _NAME.match(name):
        return "the label key %s must be at most 63 letters, digits, '-', '_' or '.', starting and ending " \
               "with a letter or digit, after an optional prefix/" % key
    return None


def label_value_error(value):
    """Why ``value`` is not a label value ("web", "", "v1.2_a"), or None."""
    if not isinstance(value, str):
        return "the label value %s is not a string (quote it)" % (value,)
    if value and (len(value) > 63 or not _NAME.match(value)):
        return "the label value %s must be at most 63 letters, digits, '-', '_' or '.', starting and ending " \
               "with a letter or digit" % value
    return None


def _selector_tokens(text):
    """(kind, text, start, end) of each token of a label selector, as the API server's lexer cuts it:
    symbols, the keywords in and notin, and identifiers (anything else up to a space or a symbol)."""
    tokens, index = [], 0
    while index < len(text):
        if text[index].isspace():
            index += 1
            continue
        symbol = next((s for s in _SYMBOLS if text.startswith(s, index)), None)
        if symbol:
            tokens.append((symbol, symbol, index, index + len(symbol)))
            index += len(symbol)
            continue
        end = index
        while end < len(text) and not text[end].isspace() and not any(text.startswith(s, end) for s in _SYMBOLS):
            end += 1
        word = text[index:end]
        tokens.append((word if word in ("in", "notin") else "identifier", word, index, end))
        index = end
    tokens.append(("end", "", len(text), len(text)))
    return tokens


def selector_text_error(text):
    """Why ``text`` is not a label selector the API server would take ("app=web,tier in (a,b),!legacy",
    "gen>5"), in words, or None. An empty text is valid (it selects everything); callers that must not
    select everything refuse it themselves."""
    tokens = _selector_tokens(str(text))
    position = 0
    while tokens[position][0] != "end":
        start = tokens[position]
        error, position = _requirement_error(tokens, position)
        if error:
            return error
        written = str(text)[start[2]:tokens[position - 1][3]]
        kind, found = tokens[position][0], tokens[position][1]
        if kind == ",":
            position += 1
            if tokens[position][0] not in ("identifier", "!"):
                return "a label key must follow the \",\" after %s" % written
        elif kind != "end":
            return "\"%s\" follows %s where \",\" or the end should be" % (found, written)
    return None


def _requirement_error(tokens, position):
    """(why the requirement at ``position`` is wrong or None, position after it)."""
    kind, found = tokens[position][0], tokens[position][1]
    if kind == "!":
        position += 1
        if tokens[position][0] != "identifier":
            return "\"!\" must be followed by a label key", position
        return label_key_error(tokens[position][1]), position + 1
    if kind != "identifier":
        return "it needs a label key where \"%s\" is" % found, position
    key = found
    error = label_key_error(key)
    if error:
        return error, position
    position += 1
    operator = tokens[position][0]
    if operator in (",", "end"):
        return None, position
    if operator not in _OPERATORS:
        return "\"%s\" follows the key %s where an operator (=, ==, !=, in, notin, <, >) should be" % (
            tokens[position][1], key), position
    position += 1
    if operator in ("in", "notin"):
        return _values_error(tokens, position, key, operator)
    kind, value = tokens[position][0], tokens[position][1]
    if operator in ("<", ">"):
        if kind not in ("identifier", "in", "notin") or not re.match(r"^-?\d+$", value):
            return "%s %s needs a whole number after it" % (key, operator), position
        return None, position + 1
    if kind in (",", "end"):
        return None, position
    if kind not in ("identifier", "in", "notin"):
        return "\"%s\" follows %s%s where a value should be" % (value, key, operator), position
    return label_value_error(value), position + 1


def _values_error(tokens, position, key, operator):
    if tokens[position][0] != "(":
        return "%s %s needs its values in parentheses, like %s %s (a,b)" % (key, operator, key, operator), position
    position += 1
    values = []
    while True:
        kind, value = tokens[position][0], tokens[position][1]
        if kind == ")":
            if not values:
                return "%s %s () has no values" % (key, operator), position
            return next((label_value_error(v) for v in values if label_value_error(v)), None), position + 1
        if kind == "end":
            return "the list after \"%s %s\" has no closing \")\"" % (key, operator), position
        if kind == ",":
            values.append("")
            position += 1
            continue
        if kind not in ("identifier", "in", "notin"):
            return "\"%s\" is among the values of %s %s" % (value, key, operator), position
        values.append(value)
        position += 1
        if tokens[position][0] not in (",", ")", "end"):
            return "\"%s\" follows the value %s of %s %s where \",\" or \")\" should be" % (
                tokens[position][1], value, key, operator), position


def field_selector_text_error(text):
    """Why ``text`` is not a field selector ("status.phase=Running,spec.nodeName!=n1"), in words, or None.
    Terms are split at commas not escaped with a backslash; each is field=value, field==value or
    field!=value."""
    terms, current, escaped = [], "", False
    for char in str(text):
        if escaped:
            if char not in "\\,=":
                return "\\%s is not an escape (a field selector knows \\\\ \\, \\=)" % char
            current += "\\" + char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(current)
            current = ""
        else:
            current += char
    if escaped:
        return "it ends with a lone \\"
    terms.append(current)
    for term in terms:
        if not term.strip():
            continue
        field = re.split(r"!=|==|=", term, maxsplit=1)
        if len(field) < 2:
            return "%s is not field=value, field==value or field!=value" % term
        if not _FIELD.match(field[0]):
            return "\"%s\" in %s is not a field name like status.phase" % (field[0], term)
    return None
