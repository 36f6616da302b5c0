# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""What good looks like: expected bus bandwidth per GPU model and scope (pure).

The catalog is a document (the collection's ``files/expected_busbw.yml``, or the module's
``expectations`` option) with ``models`` (how a GPU name maps to a model, first match
wins) and ``expectations`` (a busbw figure per model, scope, GPUs per node and test,
with its source and tolerance).

``validate(doc)``                  a clean copy of the document, or CatalogError
``merge(base, overrides)``         the user's entries first; same ``id`` replaces
``model_for(catalog, gpu_name)``   the model entry of a GPU name, or None
``select(catalog, ...)``           the expectation for a run, or None
``figure_at(expectation, size)``   the figure that applies to a run's largest size, or None
``verdict(...)``                   the comparison, with a sentence that explains it
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import gates as G
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.command import NcclTestsError, size_to_bytes
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.errors import NcclError

SCOPES = ("single_node", "multi_node")
PASS, BELOW, NOT_COMPARED = "pass", "below", "not_compared"
_SCOPE_WORDS = {"single_node": "single-node", "multi_node": "multi-node"}


class CatalogError(NcclError):
    """The catalog (or an override) is malformed; the message names the entry and the field."""


# --------------------------------------------------------------------------- the document

def validate(doc, check_models=True):
    """A clean copy of a catalog document. Raises CatalogError naming what is wrong."""
    if doc is None:
        return {"models": [], "expectations": []}
    if not isinstance(doc, dict):
        raise CatalogError("the expectations catalog must be a mapping with models and expectations, got %s"
                           % type(doc).__name__)
    models = []
    for i, m in enumerate(_list(doc, "models")):
        where = "models[%d]" % i
        if not isinstance(m, dict) or not m.get("id"):
            raise CatalogError("%s needs an id, got %r" % (where, m))
        match = m.get("match")
        if isinstance(match, str):
            match = [match]
        if not isinstance(match, list) or not match or not all(isinstance(x, str) and x.strip() for x in match):
            raise CatalogError("%s (%s): match must be a non-empty list of GPU name texts, got %r"
                               % (where, m["id"], m.get("match")))
        models.append({"id": str(m["id"]), "label": str(m.get("label") or m["id"]), "match": list(match)})
    expectations = []
    for i, e in enumerate(_list(doc, "expectations")):
        expectations.append(_expectation(e, "expectations[%d]" % i))
    known = set(m["id"] for m in models)
    for e in expectations:
        if check_models and e["model"] not in known:
            raise CatalogError("expectation %s names model %r, which no entry of models defines (known: %s)"
                               % (e["id"], e["model"], ", ".join(sorted(known))))
    return {"models": models, "expectations": expectations}


def _list(doc, key):
    value = doc.get(key) or []
    if not isinstance(value, list):
        raise CatalogError("%s must be a list, got %s" % (key, type(value).__name__))
    return value


def _expectation(e, where):
    if not isinstance(e, dict):
        raise CatalogError("%s must be a mapping, got %r" % (where, e))
    for key in ("id", "model", "scope", "test"):
        if not e.get(key):
            raise CatalogError("%s needs %s, got %r" % (where, key, e))
    where = "%s (%s)" % (where, e["id"])
    if e["scope"] not in SCOPES:
        raise CatalogError("%s: scope must be one of %s, got %r" % (where, ", ".join(SCOPES), e["scope"]))
    busbw = e.get("busbw")
    if busbw is not None and (isinstance(busbw, bool) or not isinstance(busbw, (int, float)) or busbw <= 0):
        raise CatalogError("%s: busbw must be a positive number of GB/s, or null when no figure is known, got %r"
                           % (where, busbw))
    tolerance = e.get("tolerance_pct", 10)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 100:
        raise CatalogError("%s: tolerance_pct must be a number from 0 to 99, got %r" % (where, tolerance))
    gpus = e.get("gpus")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
        raise CatalogError("%s: gpus must be a positive integer (GPUs per node), got %r" % (where, gpus))
    try:
        min_size = size_to_bytes(e.get("min_size", 0), "min_size")
        figures = [(min_size, float(busbw))] if busbw is not None else []
        more = e.get("busbw_at") or {}
        if not isinstance(more, dict):
            raise CatalogError("%s: busbw_at must map sizes to GB/s, for example {1G: 466.35}, got %r" % (where, more))
        for key, value in more.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise CatalogError("%s: busbw_at[%s] must be a positive number of GB/s, got %r" % (where, key, value))
            figures.append((size_to_bytes(str(key), "busbw_at size"), float(value)))
    except NcclTestsError as exc:
        raise CatalogError("%s: %s" % (where, exc))
    if figures and busbw is None:
        raise CatalogError("%s: busbw_at needs busbw (the figure at min_size)" % where)
    source = e.get("source")
    if not isinstance(source, dict) or not source.get("title"):
        raise CatalogError("%s: source must say where the figure comes from (a mapping with title, url, detail)"
                           % where)
    return {
        "id": str(e["id"]), "model": str(e["model"]), "scope": e["scope"], "test": str(e["test"]),
        "gpus": gpus, "network": str(e["network"]) if e.get("network") else None,
        "min_size": min_size, "busbw": float(busbw) if busbw is not None else None,
        # Every published (size, busbw) pair, smallest size first.
        "figures": sorted(set(figures)),
        "tolerance_pct": float(tolerance),
        "source": {"title": str(source["title"]), "url": source.get("url"), "detail": source.get("detail")},
    }


def merge(base, overrides):
    """``base`` with the user's ``overrides`` (same schema) on top.

    An override with the ``id`` of a catalog entry replaces it; new entries come first,
    so a user's model rule is tried before the catalog's (first match wins).
    """
    base = validate(base)
    if not overrides:
        return base
    extra = validate({"models": (overrides or {}).get("models") or [],
                      "expectations": (overrides or {}).get("expectations") or []}
                     if isinstance(overrides, dict) else overrides, check_models=False)
    out = {}
    for key in ("models", "expectations"):
        replaced = dict((x["id"], x) for x in extra[key])
        kept = [replaced.pop(x["id"]) if x["id"] in replaced else x for x in base[key]]
        new = [x for x in extra[key] if x["id"] in replaced]
        out[key] = new + kept
    return validate(out)


# --------------------------------------------------------------------------- selection

def model_for(catalog, gpu_name):
    """The model entry whose match text is found first in ``gpu_name`` (catalog order)."""
    for model in catalog["models"]:
        if G.first_match(gpu_name, model["match"]) is not None:
            return model
    return None


def select(catalog, gpu_models, test, scope, gpus_per_node=None, network=None):
    """``(expectation or None, model or None, why-not or None)`` for one run.

    One GPU model only: a job over several models has no single expectation. For
    multi_node, the expectation's ``network`` must equal ``network`` (case-insensitive).
    """
    names = sorted(set(n for n in gpu_models or [] if n))
    if not names:
        return None, None, "nccl-tests printed no GPU name"
    models = []
    for name in names:
        model = model_for(catalog, name)
        if model is None:
            return None, None, "no catalog model matches the GPU name %r" % name
        if model not in models:
            models.append(model)
    if len(models) > 1:
        return None, None, "the job spans several GPU models (%s)" % ", ".join(m["label"] for m in models)
    model = models[0]
    candidates = [e for e in catalog["expectations"]
                  if e["model"] == model["id"] and e["scope"] == scope and e["test"] == test]
    if scope == "multi_node":
        if not network:
            return None, model, "no network was given for the multi-node run (e.g. 8x400G)"
        candidates = [e for e in candidates if (e["network"] or "").lower() == str(network).lower()]
    if gpus_per_node is not None:
        candidates = [e for e in candidates if e["gpus"] in (None, gpus_per_node)]
    if not candidates:
        return None, model, ("the catalog has no %s %s expectation for %s%s%s" % (
            _SCOPE_WORDS[scope], test, model["label"],
            " with %d GPUs per node" % gpus_per_node if gpus_per_node is not None else "",
            " over %s" % network if scope == "multi_node" else ""))
    return candidates[0], model, None


def figure_at(expectation, size):
    """``(size, busbw)``: the figure at the largest published size not above ``size``, or None.

    busbw grows with the message size, so a figure for a larger size than the run reached
    would judge it unfairly.
    """
    usable = [f for f in expectation["figures"] if size is not None and f[0] <= size]
    return usable[-1] if usable else None


# --------------------------------------------------------------------------- verdict

def human_size(size):
    """``8589934592`` -> ``8 GiB``; sizes that are not whole KiB/MiB/GiB stay in bytes."""
    if size is None:
        return "?"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "%d %s" % (size // factor, unit)
    return "%d B" % size


def _source_words(source):
    text = source.get("title") or "no source"
    if source.get("url"):
        text += ", " + source["url"]
    return text


def verdict(host, test, measured, size, expectation, model, why_not=None):
    """The comparison as data plus one plain sentence (``text``).

    ``status``: ``pass`` (within tolerance), ``below`` (more than tolerance_pct under the
    expectation: the gate fails), ``not_compared`` (no expectation, no figure, no result,
    or a largest size under the expectation's smallest figure; ``text`` says which). The figure
    compared is the one at the largest published size not above the run's largest size.
    """
    out = {"status": NOT_COMPARED, "host": host, "test": test, "measured_busbw": measured, "size": size,
           "model": model["label"] if model else None, "expectation_id": None, "expected_busbw": None,
           "expected_size": None, "tolerance_pct": None, "deficit_pct": None, "source": None, "text": ""}
    head = "%s: %s busbw %s GB/s at %s" % (host, test, _gbs(measured), human_size(size))
    if expectation is None:
        out["text"] = "%s, not compared with an expectation: %s" % (head, why_not or "none selected")
        return out
    scope = _SCOPE_WORDS[expectation["scope"]]
    what = "the %s %s expectation" % (model["label"] if model else expectation["model"], scope)
    out.update(expectation_id=expectation["id"], tolerance_pct=expectation["tolerance_pct"],
               source=expectation["source"], expected_busbw=expectation["busbw"])
    if expectation["busbw"] is None:
        out["text"] = "%s, not compared: %s has no published figure (%s)" % (
            head, what, _source_words(expectation["source"]))
        return out
    if measured is None:
        out["text"] = "%s: no out-of-place result to compare with %s of %s GB/s" % (
            head, what, _gbs(expectation["busbw"]))
        return out
    figure = figure_at(expectation, size)
    if figure is None:
        smallest = expectation["figures"][0][0]
        out["text"] = ("%s, not compared: %s has figures from %s, the largest size measured is smaller "
                       "(raise maxbytes)" % (head, what, human_size(smallest)))
        return out
    figure_size, expected = figure
    out["expected_busbw"], out["expected_size"] = expected, figure_size
    at = " at %s" % human_size(figure_size) if figure_size != size else ""
    deficit = (expected - measured) / expected * 100.0
    out["deficit_pct"] = round(deficit, 1)
    source = "(source: %s)" % _source_words(expectation["source"])
    if deficit > expectation["tolerance_pct"]:
        out["status"] = BELOW
        out["text"] = "%s, %d %% below %s of %s GB/s%s, more than the %s %% tolerance %s" % (
            head, int(round(deficit)), what, _gbs(expected), at, _gbs(expectation["tolerance_pct"]), source)
    else:
        out["status"] = PASS
        relation = ("%d %% below" % int(round(deficit)) if deficit >= 0.5
                    else "%d %% above" % int(round(-deficit)) if deficit <= -0.5 else "at")
        out["text"] = "%s, %s %s of %s GB/s%s, within the %s %% tolerance %s" % (
            head, relation, what, _gbs(expected), at, _gbs(expectation["tolerance_pct"]), source)
    return out


def _gbs(value):
    if value is None:
        return "?"
    if value >= 100 or float(value).is_integer():
        return "%.0f" % value
    return ("%.1f" % value) if value >= 1 else ("%.2f" % value)
