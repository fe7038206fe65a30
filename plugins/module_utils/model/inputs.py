# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Why a module's parameter is refused, in one line that names the option, or None.

The modules call these from their ``validated(params)``, before any request,
and raise InvalidInput with the first reason. A value that is not given
(None) is never refused here; a value that is given but empty is, since a
templated variable that came out empty must not look like success.
"""

from __future__ import annotations

import re

from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import parse_quantity
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import (
    field_selector_text_error,
    label_key_error,
    label_value_error,
    selector_text_error,
)


def first_error(*errors):
    """The first of ``errors`` that is not None, or None."""
    return next((error for error in errors if error), None)


def text_error(name, text, optional=True):
    """Why a given string option is refused: it is empty or blank."""
    if text is not None and not str(text).strip():
        return "%s is empty: give a value%s." % (name, " or leave the option out" if optional else "")
    return None


def names_error(name, names, what="name", optional=True):
    """Why a given list of names is refused: it is empty, or one of its entries is."""
    if names is None:
        return None
    if not names:
        return "%s is empty: name at least one %s%s." % (name, what, ", or leave the option out" if optional else "")
    index = first_empty(names)
    if index:
        return "%s has an empty %s (item %d)." % (name, what, index)
    return None


def pod_keys_error(name, pods):
    """Why a list of pods is refused: one of them is not ``namespace/name``."""
    malformed = [pod for pod in pods if len(str(pod).split("/")) != 2 or not all(str(pod).split("/"))]
    if malformed:
        return "%s takes namespace/name, got %s." % (name, ", ".join(str(pod) for pod in malformed))
    return None


def first_empty(names):
    """The position (from 1) of the first entry of ``names`` that is missing or blank, or None."""
    return next((index for index, entry in enumerate(names, 1) if entry is None or not str(entry).strip()), None)


def selector_error(name, text):
    """Why a given label selector option is refused: empty (it would select everything) or malformed."""
    if text is None:
        return None
    if not str(text).strip():
        return "%s is empty: to Kubernetes an empty selector selects everything; give one or leave the " \
               "option out." % name
    problem = selector_text_error(text)
    if problem:
        return "%s \"%s\" is not a label selector: %s." % (name, str(text).strip(), problem)
    return None


def field_selector_error(name, text):
    """Why a given field selector option is refused: empty (it would select everything) or malformed."""
    if text is None:
        return None
    if not str(text).strip():
        return "%s is empty: to Kubernetes an empty selector selects everything; give one or leave the " \
               "option out." % name
    problem = field_selector_text_error(text)
    if problem:
        return "%s \"%s\" is not a field selector: %s." % (name, str(text).strip(), problem)
    return None


def number_error(name, value, minimum, shown=None):
    """Why a given number is refused: it is below ``minimum``. ``shown`` is the value as it was written, where
    ``value`` is what it was read as (a role's variable read as Jinja's int filter reads it)."""
    if value is not None and value < minimum:
        return "%s must be %s or more, got %s." % (name, minimum, value if shown is None else shown)
    return None


def quantities_error(name, quantities, required=(), above_zero=False):
    """Why a given resource list ({"cpu": "500m", "memory": "1Gi"}) is refused: a resource of ``required``
    is missing, an amount is not a Kubernetes quantity, or it is negative (or 0, with ``above_zero``)."""
    if quantities is None:
        return None
    missing = [resource for resource in required if resource not in quantities]
    if missing:
        return "%s needs %s; %s missing." % (name, ", ".join(required), ", ".join(missing))
    for resource, text in sorted(quantities.items()):
        try:
            amount = parse_quantity(text)
        except (TypeError, ValueError):
            return "%s.%s \"%s\" is not a Kubernetes quantity (like 500m, 2, 16Gi)." % (name, resource, text)
        if amount < 0 or (above_zero and amount <= 0):
            return "%s.%s must be %s, got %s." % (name, resource, "more than 0" if above_zero else "0 or more", text)
    return None


def labels_error(name, labels):
    """Why a given set of labels ({"karpenter.sh/nodepool": "general"}) is refused: a key or a value
    a node could not carry (a value that is not a string, for one)."""
    for key, value in sorted((labels or {}).items(), key=lambda item: str(item[0])):
        problem = label_key_error(key)
        if problem:
            return "%s: %s." % (name, problem)
        problem = label_value_error(value)
        if problem:
            return "%s.%s: %s." % (name, key, problem)
    return None


# What a rotation id may be: it names the warm nodes' Deployment, rotation-<id>, and labels what the rotation makes.
ROTATION_ID_MAX = 63 - len("rotation-")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def rotation_id_error(name, value):
    """Why a rotation id is refused: not a DNS-1123 label short enough to name what the rotation makes."""
    text = str(value)
    if _DNS_LABEL.match(text) and len(text) <= ROTATION_ID_MAX:
        return None
    return ("%s %s is not a DNS-1123 label of at most %d characters (lower-case letters, digits and '-', starting "
            "and ending with a letter or a digit): it names the warm nodes' Deployment rotation-<id>; for example "
            "%s." % (name, text, ROTATION_ID_MAX, _suggested(text)))


def _suggested(text):
    suggestion = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:ROTATION_ID_MAX].strip("-")
    return suggestion or "pool-2026-12"
