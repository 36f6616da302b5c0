"""A FAKE of the AWX REST API (/api/v2/), for exercising playbooks/awx_setup.yml here,
where no AWX server exists. It stores objects per endpoint and answers the generic
list/filter/create/update/delete/association requests the awx.awx modules make; it
validates nothing the way AWX does. Passing against it shows the playbook's module
parameters, lookups and idempotence logic work together — not that AWX accepts them.
"""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

API = "/api/v2/"


class FakeAwx:
    def __init__(self):
        self.objects = {"organizations": {1: {"id": 1, "name": "Default"}}, "credentials": {}}
        self.surveys = {}
        self.associations = {}
        self.requests = []
        self.next_id = 100
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        for ep, objs in self.objects.items():
            for obj in objs.values():
                self._decorate(ep, obj)

    def add(self, endpoint, **fields):
        with self.lock:
            return self._create(endpoint, fields)

    def named(self, endpoint):
        return {o["name"]: o for o in self.objects.get(endpoint, {}).values()}

    def start(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def _decorate(self, endpoint, obj):
        url = "%s%s/%d/" % (API, endpoint, obj["id"])
        obj.update(url=url, type=endpoint[:-1] if endpoint != "inventories" else "inventory")
        obj.setdefault("summary_fields", {})
        obj["related"] = {"survey_spec": url + "survey_spec/", "credentials": url + "credentials/", "update": url + "update/"}
        if endpoint == "projects":
            obj.setdefault("scm_revision", "")

    def _create(self, endpoint, fields):
        self.next_id += 1
        obj = dict(fields, id=self.next_id)
        self._decorate(endpoint, obj)
        self.objects.setdefault(endpoint, {})[obj["id"]] = obj
        return obj

    @staticmethod
    def _matches(obj, query):
        ors = {k[4:]: v for k, v in query.items() if k.startswith("or__")}
        ands = {k: v for k, v in query.items() if not k.startswith("or__") and k not in ("page_size", "page")}
        if ors and not any(str(obj.get(k)) == v for k, v in ors.items()):
            return False
        return all(str(obj.get(k)) == v for k, v in ands.items())

    def handle(self, method, path, query, body):
        self.requests.append((method, path))
        m = re.match(r"^%s(\w+)/(?:(\d+)/(?:(\w+)/)?)?$" % re.escape(API), path)
        if not m:
            return 404, {"detail": "not found: %s" % path}
        endpoint, oid, sub = m.group(1), m.group(2), m.group(3)
        with self.lock:
            if endpoint == "unified_job_templates" and oid is None and method == "GET":
                # AWX's union of everything that can be launched or scheduled.
                found = [o for ep in ("job_templates", "projects", "inventory_sources")
                         for o in self.objects.get(ep, {}).values() if self._matches(o, query)]
                return 200, {"count": len(found), "results": found, "next": None, "previous": None}
            store = self.objects.setdefault(endpoint, {})
            if oid is None:
                if method == "GET":
                    found = [o for o in store.values() if self._matches(o, query)]
                    return 200, {"count": len(found), "results": found, "next": None, "previous": None}
                if method == "POST":
                    return 201, self._create(endpoint, body)
                return 405, {}
            oid = int(oid)
            if oid not in store:
                return 404, {"detail": "no %s %d" % (endpoint, oid)}
            key = (endpoint, oid)
            if sub == "survey_spec":
                if method == "GET":
                    return 200, self.surveys.get(key, {})
                if method == "POST":
                    self.surveys[key] = body
                    return 200, {}
                if method == "DELETE":
                    self.surveys.pop(key, None)
                    return 200, {}
            if sub is not None:
                linked = self.associations.setdefault(key + (sub,), [])
                if method == "GET":
                    items = [self.objects[sub][i] for i in linked]
                    return 200, {"count": len(items), "results": items, "next": None, "previous": None}
                if method == "POST":
                    if body.get("disassociate"):
                        linked.remove(body["id"])
                    elif body["id"] not in linked:
                        linked.append(body["id"])
                    return 204, None
                return 405, {}
            if method == "GET":
                return 200, store[oid]
            if method == "PATCH":
                store[oid].update(body)
                return 200, store[oid]
            if method == "DELETE":
                del store[oid]
                return 204, None
        return 405, {}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                status, payload = fake.handle(method, parts.path, dict(parse_qsl(parts.query)), body)
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-API-Product-Name", "AWX")
                self.send_header("X-API-Product-Version", "24.6.1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 (http.server's naming)
                self._serve("GET")

            def do_POST(self):  # noqa: N802
                self._serve("POST")

            def do_PATCH(self):  # noqa: N802
                self._serve("PATCH")

            def do_DELETE(self):  # noqa: N802
                self._serve("DELETE")

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

        return Handler
