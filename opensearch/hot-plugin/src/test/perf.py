# Rough speed check of the baedal-hot plugin against a running node: python3 perf.py http://127.0.0.1:PORT 50000
# Creates perf_shops_v1 (alias perf_shops, the table) and perf_menus, rebuilds, updates, searches.
import json, random, time, urllib.request, sys
OS = sys.argv[1]
N = int(sys.argv[2])
def req(method, path, body=None, ctype='application/json'):
    data = body.encode() if isinstance(body, str) else body
    r = urllib.request.Request(OS + path, data=data, method=method, headers={'content-type': ctype})
    try:
        with urllib.request.urlopen(r, timeout=300) as f:
            return f.status, json.loads(f.read() or b'{}')
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'{}')
for ix in ['perf_shops_v1', 'perf_menus']:
    req('DELETE', '/' + ix)
print(req('PUT', '/perf_shops_v1', json.dumps({"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.baedal_hot.table": True},
  "aliases": {"perf_shops": {"is_write_index": True}},
  "mappings": {"properties": {"id": {"type": "long"}, "version": {"type": "long"}, "open": {"type": "boolean"}, "delivery_minutes": {"type": "integer"},
   "delivery_fee": {"type": "integer"}, "rating": {"type": "double"}, "review_count": {"type": "integer"}}}}))[0])
print(req('PUT', '/perf_menus', json.dumps({"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"id": {"type": "long"}, "menus": {"type": "nested", "properties": {"extra_fee": {"type": "integer"}, "cook_minutes": {"type": "integer"}}}}}}))[0])
rnd = random.Random(1)
shops = []
for i in range(1, N + 1):
    shops.append({"id": i, "version": 1, "open": rnd.random() < 0.8, "delivery_minutes": rnd.randint(10, 60), "delivery_fee": rnd.choice([0, 1000, 2000, 3000, 4000]),
                  "rating": round(rnd.uniform(3, 5), 1), "review_count": rnd.randint(0, 1000)})
t0 = time.time()
for k in range(0, N, 5000):
    lines = []
    for s in shops[k:k+5000]:
        lines.append(json.dumps({"index": {"_index": "perf_shops", "_id": str(s["id"]), "version": 1, "version_type": "external"}}))
        lines.append(json.dumps(s))
        lines.append(json.dumps({"index": {"_index": "perf_menus", "_id": str(s["id"])}}))
        lines.append(json.dumps({"id": s["id"], "menus": [{"extra_fee": rnd.choice([0, 500, 1000, 2000]), "cook_minutes": rnd.randint(5, 30)} for _ in range(5)]}))
    st, b = req('POST', '/_bulk', "\n".join(lines) + "\n", 'application/x-ndjson')
    assert st == 200 and not b["errors"], b
req('POST', '/perf_menus,perf_shops/_refresh')
print("indexed %d shops x 5 menus in %.1fs" % (N, time.time() - t0))
t0 = time.time()
st, b = req('POST', '/_baedal/hot/perf_shops/_rebuild')
print("rebuild", st, "%.2fs" % (time.time() - t0), json.dumps(b["nodes"]))
# updates of 1000 entries
lat = []
for k in range(0, 20000, 1000):
    batch = [dict(s, version=2, delivery_minutes=s["delivery_minutes"] + 1) for s in shops[k:k+1000]]
    t0 = time.time()
    st, b = req('POST', '/_baedal/hot/perf_shops/_update', json.dumps({"shops": batch}))
    lat.append(time.time() - t0)
    assert st == 200 and b["applied"] == 1000, b
lat.sort()
print("update 1000 entries: median %.1f ms, max %.1f ms" % (lat[len(lat)//2] * 1000, lat[-1] * 1000))
menu = {"baedal_hot_menu": {"table": "perf_shops", "max_total_fee": 3000}}
q = {"size": 20, "query": {"bool": {"filter": [{"baedal_hot_shop": {"table": "perf_shops", "open": True, "min_rating": 4.0}},
     {"nested": {"path": "menus", "query": menu}}]}},
     "sort": [{"baedal_hot": {"table": "perf_shops", "field": "eta", "order": "asc", "nested": {"path": "menus", "filter": menu}}}, {"id": "asc"}],
     "ext": {"baedal_hot": {"table": "perf_shops"}}}
for name, body in [("filter+eta sort+ext", q), ("filter+delivery_fee sort", dict(q, sort=[{"baedal_hot": {"table": "perf_shops", "field": "delivery_fee", "order": "asc"}}, {"id": "asc"}]))]:
    lat = []
    for _ in range(30):
        t0 = time.time()
        st, b = req('POST', '/perf_menus/_search', json.dumps(body))
        lat.append(time.time() - t0)
        assert st == 200 and b["_shards"]["failed"] == 0, b
    lat.sort()
    print("%s: total %s, median %.1f ms, p90 %.1f ms, took(last) %d ms, first sort %s" % (name, b["hits"]["total"], lat[15] * 1000, lat[27] * 1000, b["took"], b["hits"]["hits"][0]["sort"]))
