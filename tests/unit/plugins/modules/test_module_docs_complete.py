# -*- coding: utf-8 -*-
"""Every module's documentation is complete the way the docs site and Galaxy need it:
each return value has a sample, each dict (and list of dicts) return value says what it
contains (itself, or through a cross-reference RV(aiinfra.fabric.<module>#module:<key>) to
the one module that describes that shape, since RETURN cannot use doc fragments), each
module lists its requirements (itself or through one of the collection's doc fragments, as
ansible-doc shows them), and each author has a GitHub handle.

The DOCUMENTATION and RETURN strings are read from the module files with ast (the
modules are not imported), so a module that fails to import is still checked here."""

from __future__ import annotations

import ast
import glob
import os
import re

import pytest
import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULES = sorted(glob.glob(os.path.join(TOP, "plugins", "modules", "*.py")))
FILTER_DOCS = sorted(glob.glob(os.path.join(TOP, "plugins", "filter", "*.yml")))
# "Name (@handle)", as ansible-test and antsibull-docs expect an author line.
AUTHOR = re.compile(r"^\S.* \(@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\)$")
# A return value of another module of this collection, in ansible-doc markup:
# RV(aiinfra.fabric.<module>#module:<key>[.<key>...]).
RV_REFERENCE = re.compile(r"RV\(aiinfra\.fabric\.(\w+)#module:([^)=]+)\)")


def module_docs(path):
    """The module's DOCUMENTATION and RETURN, parsed from their YAML."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("DOCUMENTATION", "RETURN") and isinstance(node.value, ast.Constant):
                found[name] = yaml.safe_load(node.value.value)
    return found.get("DOCUMENTATION") or {}, found.get("RETURN") or {}


def fragment_doc(name):
    """The DOCUMENTATION of the collection's doc fragment ``aiinfra.fabric.<file>[.<variant>]``,
    parsed from plugins/doc_fragments/<file>.py with ast; None for a fragment from elsewhere."""
    parts = name.split(".")
    if parts[:2] != ["aiinfra", "fabric"] or len(parts) not in (3, 4):
        return None
    attr = parts[3].upper() if len(parts) == 4 else "DOCUMENTATION"
    path = os.path.join(TOP, "plugins", "doc_fragments", parts[2] + ".py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == attr and isinstance(node.value, ast.Constant):
            return yaml.safe_load(node.value.value) or {}
    raise AssertionError("doc fragment %s not found in %s" % (name, path))


def requirements(doc):
    """The module's requirements and those of the collection's doc fragments it extends."""
    reqs = list(doc.get("requirements") or [])
    for name in doc.get("extends_documentation_fragment") or []:
        reqs += (fragment_doc(name) or {}).get("requirements") or []
    return reqs


def documented_return(module, key):
    """The RETURN specification of ``key`` (dotted through contains: ``diff.before``) in
    plugins/modules/<module>.py; None when that module or key is not there."""
    path = os.path.join(TOP, "plugins", "modules", module + ".py")
    if not os.path.isfile(path):
        return None
    spec = {"contains": module_docs(path)[1]}
    for part in key.split("."):
        spec = (spec.get("contains") or {}).get(part)
        if not isinstance(spec, dict):
            return None
    return spec


def cross_reference_problem(name, spec, resolve):
    """Why a dict (or list of dicts) return value without contains is not documented
    elsewhere either; None when it is: its description names with RV() at least one return
    value of a module of this collection, and each one it names is documented there with the
    same type and elements and a contains of its own."""
    description = spec.get("description")
    text = " ".join(description) if isinstance(description, list) else str(description or "")
    refs = RV_REFERENCE.findall(text)
    kind = "dict" if spec.get("type") == "dict" else "list of dicts"
    if not refs:
        return "%s: a %s without contains" % (name, kind)
    for module, key in refs:
        target = resolve(module, key)
        ref = "RV(aiinfra.fabric.%s#module:%s)" % (module, key)
        if target is None:
            return "%s: %s is not a documented return value" % (name, ref)
        if (target.get("type"), target.get("elements")) != (spec.get("type"), spec.get("elements")):
            theirs = str(target.get("type")) + (" of %s" % target["elements"] if target.get("elements") else "")
            return "%s: a %s, but %s is a %s" % (name, kind, ref, theirs)
        if not target.get("contains"):
            return "%s: %s says what it contains no more than this one" % (name, ref)
    return None


def return_problems(ret, prefix="", top=True, resolve=documented_return):
    """One line per return value that lacks a sample (top level) or a contains (dicts,
    lists of dicts, at any depth) and a cross-reference to another module's return
    value that has one."""
    problems = []
    for key, spec in sorted((ret or {}).items()):
        name = prefix + key
        if not isinstance(spec, dict):
            problems.append("%s: not a return value specification" % name)
            continue
        kind, elements = spec.get("type"), spec.get("elements")
        if top and "sample" not in spec:
            problems.append("%s: no sample" % name)
        if kind == "list" and not elements:
            problems.append("%s: a list without elements (the type of its items)" % name)
        if kind == "dict" or (kind == "list" and elements == "dict"):
            if not spec.get("contains"):
                problem = cross_reference_problem(name, spec, resolve)
                if problem:
                    problems.append(problem)
        elif spec.get("contains"):
            problems.append("%s: contains on a %s%s" % (name, kind, "" if kind != "list" else " of %s" % elements))
        problems += return_problems(spec.get("contains"), name + ".", top=False, resolve=resolve)
    return problems


def module_ids():
    return [os.path.basename(p)[:-3] for p in MODULES]


def test_there_are_modules():
    assert len(MODULES) > 10


@pytest.mark.parametrize("path", MODULES, ids=module_ids())
def test_return_values_have_samples_and_contains(path):
    doc, ret = module_docs(path)
    assert doc, "no DOCUMENTATION"
    assert ret, "no RETURN"
    problems = return_problems(ret)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", MODULES, ids=module_ids())
def test_requirements_listed(path):
    reqs = requirements(module_docs(path)[0])
    assert isinstance(reqs, list) and reqs and all(isinstance(r, str) and r.strip() for r in reqs), \
        "requirements: %r" % (reqs,)


@pytest.mark.parametrize("path", MODULES, ids=module_ids())
def test_authors_have_github_handles(path):
    doc = module_docs(path)[0]
    authors = doc.get("author")
    authors = [authors] if isinstance(authors, str) else authors
    assert authors, "no author"
    bad = [a for a in authors if not AUTHOR.match(str(a))]
    assert not bad, "authors without a 'Name (@handle)' form: %s" % bad


@pytest.mark.parametrize("path", FILTER_DOCS, ids=[os.path.basename(p)[:-4] for p in FILTER_DOCS])
def test_filter_authors_have_github_handles(path):
    with open(path) as f:
        doc = yaml.safe_load(f)["DOCUMENTATION"]
    authors = doc.get("author")
    authors = [authors] if isinstance(authors, str) else authors
    assert authors and all(AUTHOR.match(str(a)) for a in authors), authors


def test_the_checks_catch_what_they_look_for():
    """The return-value rules on a made-up RETURN: each gap is named."""
    ret = {
        "ok": {"type": "dict", "returned": "always", "sample": {"a": 1},
               "contains": {"a": {"type": "int", "description": "x"}}},
        "no_sample": {"type": "str", "returned": "always"},
        "bare_dict": {"type": "dict", "returned": "always", "sample": {}},
        "rows": {"type": "list", "elements": "dict", "returned": "always", "sample": [],
                 "contains": {"inner": {"type": "dict", "description": "x"}}},
        "untyped_list": {"type": "list", "returned": "always", "sample": []},
        "elsewhere": {"type": "list", "elements": "dict", "returned": "always", "sample": [],
                      "description": ["As M(aiinfra.fabric.other) returns them in RV(aiinfra.fabric.other#module:rows)."]},
        "elsewhere_nested": {"type": "dict", "returned": "always", "sample": {},
                             "description": "As RV(aiinfra.fabric.other#module:diff.before).",
                             "contains": {"gone": {"type": "dict", "description": "RV(aiinfra.fabric.other#module:gone)"},
                                          "bare": {"type": "dict", "description": "RV(aiinfra.fabric.other#module:bare)"},
                                          "dict": {"type": "dict", "description": "RV(aiinfra.fabric.other#module:rows)"},
                                          "own": {"type": "dict", "description": "RV(persistent)"}}},
    }
    other = {
        "rows": {"type": "list", "elements": "dict", "contains": {"a": {"type": "int"}}},
        "bare": {"type": "dict"},
        "diff": {"type": "dict", "contains": {"before": {"type": "dict", "contains": {"a": {"type": "int"}}}}},
    }

    def resolve(module, key):
        spec = {"contains": other} if module == "other" else {}
        for part in key.split("."):
            spec = (spec.get("contains") or {}).get(part)
            if spec is None:
                return None
        return spec

    assert return_problems(ret, resolve=resolve) == [
        "bare_dict: a dict without contains",
        "elsewhere_nested.bare: RV(aiinfra.fabric.other#module:bare) says what it contains no more than this one",
        "elsewhere_nested.dict: a dict, but RV(aiinfra.fabric.other#module:rows) is a list of dict",
        "elsewhere_nested.gone: RV(aiinfra.fabric.other#module:gone) is not a documented return value",
        "elsewhere_nested.own: a dict without contains",
        "no_sample: no sample",
        "rows.inner: a dict without contains",
        "untyped_list: a list without elements (the type of its items)",
    ]
    # The real resolver reads the modules' own RETURN.
    assert documented_return("nvme_connect", "diff.before")["contains"]
    assert documented_return("nvme_connect", "diff.nothing") is None
    assert documented_return("no_such_module", "x") is None
    assert requirements({"extends_documentation_fragment": ["aiinfra.fabric.nvmet"]})
    assert not requirements({"extends_documentation_fragment": ["aiinfra.fabric.attributes.info_module"]})
    assert AUTHOR.match("aiinfra.fabric developers (@aiinfra)")
    assert not AUTHOR.match("aiinfra.fabric contributors (!UNKNOWN)")
    assert not AUTHOR.match("Jane Doe")
