// Package layout defines how the catalog is laid out in OpenSearch: the
// baseline "nested" layout (one document per shop, menus nested), the "split"
// layout (a shop index with every shop field, and a menu index with one
// document per shop holding its menus nested plus copies of the few cold shop
// fields that menu-side predicates need), and the "hot" layout (a shop index
// as split's, and a menu index holding every cold shop field, searched in one
// request with the hot fields read from the baedal-hot plugin's in-memory
// table, docs/hot-layout.md). It builds the index bodies and the documents
// from a catalog.ShopState.
//
// Invariant: no hot shop field is ever copied into a menu index, so a hot
// shop update rewrites exactly one small document (the shop document) and
// never the shop's menus. TestCopiedFieldsAreCold enforces it.
package layout

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind names a layout.
type Kind string

// The layouts.
const (
	Nested Kind = "nested"
	Split  Kind = "split"
	Hot    Kind = "hot"
)

// Kinds returns every layout, the baseline first.
func Kinds() []Kind { return []Kind{Nested, Split, Hot} }

// KindNames returns the names of every layout, for messages.
func KindNames() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, string(k))
	}
	return out
}

// JoinKinds returns the names of kinds separated by ", ".
func JoinKinds(kinds []Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// ParseKind parses a layout name.
func ParseKind(s string) (Kind, error) {
	if slices.Contains(Kinds(), Kind(s)) {
		return Kind(s), nil
	}
	return "", fmt.Errorf("layout: got %q, allowed: %s", s, JoinKinds(Kinds()))
}

// IndexSettings are the per-index settings a deployment tunes.
type IndexSettings struct {
	Shards int
	// Replicas is a fixed count ("0", "1", ... "8") or an auto-expanding
	// range "MIN-MAX" (MAX may be "all"): OpenSearch then keeps as many
	// replicas as the cluster has data nodes beyond the first, within the
	// range. The default "0-1" gives one replica on a cluster of two or more
	// data nodes and none on a single node, where a replica could never be
	// assigned (the index would stay yellow).
	Replicas        string
	RefreshInterval string // e.g. "1s"; "-1" disables refresh
	// TranslogDurability is index.translog.durability: "request" (each
	// bulk answers after its translog fsync; OpenSearch's default, also
	// for "") or "async" (the translog is fsynced every 5 s, off the write
	// path). With async the indexer acknowledges event-log entries only
	// once a flush made them durable (indexer.Config.FlushEvery).
	TranslogDurability string
}

// Translog durabilities (IndexSettings.TranslogDurability).
const (
	DurabilityRequest = "request"
	DurabilityAsync   = "async"
)

// DefaultReplicas is the replica setting of every index unless configured.
const DefaultReplicas = "0-1"

// ReplicaSettings returns the index settings that apply Replicas: either
// number_of_replicas with auto-expansion off, or auto_expand_replicas.
func (s IndexSettings) ReplicaSettings() map[string]any {
	return ReplicaSettings(s.Replicas)
}

// ReplicaSettings returns the index settings of a replica setting (see
// IndexSettings.Replicas); an invalid one yields the default.
func ReplicaSettings(replicas string) map[string]any {
	if _, _, err := parseReplicas(replicas); err != nil {
		replicas = DefaultReplicas
	}
	if n, err := strconv.Atoi(replicas); err == nil {
		return map[string]any{"number_of_replicas": n, "auto_expand_replicas": "false"}
	}
	return map[string]any{"auto_expand_replicas": replicas}
}

// parseReplicas checks a replica setting: "N" (0..8) or "MIN-MAX" (MAX a
// number >= MIN, up to 8, or "all").
func parseReplicas(s string) (lo int, hi string, err error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 8 {
			return 0, "", fmt.Errorf("got %d, allowed: 0..8 or a range like 0-1", n)
		}
		return n, s, nil
	}
	a, b, ok := strings.Cut(s, "-")
	lo, err = strconv.Atoi(a)
	if !ok || err != nil || lo < 0 || lo > 8 {
		return 0, "", fmt.Errorf("got %q, allowed: a count 0..8 or a range MIN-MAX like 0-1 or 0-all", s)
	}
	if b != "all" {
		if h, err := strconv.Atoi(b); err != nil || h < lo || h > 8 {
			return 0, "", fmt.Errorf("got %q, allowed: a count 0..8 or a range MIN-MAX like 0-1 or 0-all", s)
		}
	}
	return lo, b, nil
}

// Validate names the first invalid field; prefix is the index role.
func (s IndexSettings) Validate(prefix string) error {
	if s.Shards < 1 || s.Shards > 64 {
		return fmt.Errorf("%s-shards: got %d, allowed: 1..64", prefix, s.Shards)
	}
	if _, _, err := parseReplicas(s.Replicas); err != nil {
		return fmt.Errorf("%s-replicas: %w", prefix, err)
	}
	if s.RefreshInterval == "" {
		return fmt.Errorf("%s-refresh-interval: must not be empty (e.g. 1s, or -1 to disable)", prefix)
	}
	switch s.TranslogDurability {
	case "", DurabilityRequest, DurabilityAsync:
	default:
		return fmt.Errorf("%s-translog-durability: got %q, allowed: %s, %s", prefix, s.TranslogDurability, DurabilityRequest, DurabilityAsync)
	}
	return nil
}

// Config names the indices (through aliases) and their settings.
type Config struct {
	// Prefix is put before every alias and index name, e.g. "baedal_".
	Prefix   string
	Nested   IndexSettings
	Shops    IndexSettings
	Menus    IndexSettings
	HotShops IndexSettings
	HotMenus IndexSettings
}

// Defaults returns one shard, replicas "0-1" (one replica when the cluster
// has two or more data nodes, none on a single node) and a 1 s refresh for
// every index. The hot layout's indices have an async translog: a hot
// change shows as soon as its copy applies it, so a bulk waiting for the
// translog fsync would hold back every change read after it (on a shared
// disk, fsyncs stall for 100-500 ms; BENCHMARKS.md S1 indexing).
func Defaults() Config {
	one := IndexSettings{Shards: 1, Replicas: DefaultReplicas, RefreshInterval: "1s", TranslogDurability: DurabilityRequest}
	hot := one
	hot.TranslogDurability = DurabilityAsync
	head := hot
	head.Replicas = HotShopsReplicas
	return Config{Prefix: "baedal_", Nested: one, Shops: one, Menus: one, HotShops: head, HotMenus: hot}
}

// Flags binds the configuration to command-line flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Prefix, "index-prefix", c.Prefix, "prefix of every index and alias name")
	for _, s := range []struct {
		name string
		set  *IndexSettings
	}{{"nested", &c.Nested}, {"shops", &c.Shops}, {"menus", &c.Menus}, {"hot-shops", &c.HotShops}, {"hot-menus", &c.HotMenus}} {
		fs.IntVar(&s.set.Shards, s.name+"-shards", s.set.Shards, "primary shards of the "+s.name+" index")
		fs.StringVar(&s.set.Replicas, s.name+"-replicas", s.set.Replicas, "replicas of the "+s.name+" index: a count (0..8) or an auto-expanding range like 0-1 (one replica once there are two data nodes)")
		fs.StringVar(&s.set.RefreshInterval, s.name+"-refresh-interval", s.set.RefreshInterval, "refresh interval of the "+s.name+" index")
		fs.StringVar(&s.set.TranslogDurability, s.name+"-translog-durability", s.set.TranslogDurability, "translog durability of the "+s.name+" index: request (fsync before each bulk answers) or async (fsync off the write path; the indexer acknowledges events after a flush)")
	}
}

// HotShopsReplicas is the replica setting of the hot layout's shop-head
// index: a copy on every data node, whose baedal-hot plugin keeps its table
// from that copy's own operations (docs/hot-layout.md, "Consistency").
const HotShopsReplicas = "0-all"

// Validate checks every index's settings.
func (c *Config) Validate() error {
	var head error
	switch {
	case c.HotShops.Shards != 1:
		head = fmt.Errorf("hot-shops-shards: got %d, allowed: 1 (each node's hot table follows its whole copy of the shop-head index)", c.HotShops.Shards)
	case c.HotShops.Replicas != HotShopsReplicas:
		head = fmt.Errorf("hot-shops-replicas: got %q, allowed: %s (every data node holds a copy, and its table)", c.HotShops.Replicas, HotShopsReplicas)
	}
	return errors.Join(c.Nested.Validate("nested"), c.Shops.Validate("shops"), c.Menus.Validate("menus"),
		c.HotShops.Validate("hot-shops"), head, c.HotMenus.Validate("hot-menus"))
}

// Index roles. The alias is what readers and writers use; the concrete
// index behind it is Alias + "_v" + generation, so a reindex can swap it.
const (
	RoleNested   = "shops_nested"
	RoleShops    = "shops"
	RoleMenus    = "menus"
	RoleHotShops = "hot_shops"
	RoleHotMenus = "hot_menus"
)

// Alias returns the alias of a role.
func (c *Config) Alias(role string) string { return c.Prefix + role }

// Aliases returns the aliases a layout writes to.
func (c *Config) Aliases(k Kind) []string {
	var out []string
	for _, role := range Roles(k) {
		out = append(out, c.Alias(role))
	}
	return out
}

// Roles returns the index roles of a layout: its shop index first.
func Roles(k Kind) []string {
	switch k {
	case Nested:
		return []string{RoleNested}
	case Hot:
		return []string{RoleHotShops, RoleHotMenus}
	}
	return []string{RoleShops, RoleMenus}
}

// AsyncTranslog reports whether any index of layout k is configured with
// an async translog.
func (c *Config) AsyncTranslog(k Kind) bool {
	for _, role := range Roles(k) {
		if c.Settings(role).TranslogDurability == DurabilityAsync {
			return true
		}
	}
	return false
}

// Settings returns the settings of a role.
func (c *Config) Settings(role string) IndexSettings {
	switch role {
	case RoleNested:
		return c.Nested
	case RoleShops:
		return c.Shops
	case RoleHotShops:
		return c.HotShops
	case RoleHotMenus:
		return c.HotMenus
	}
	return c.Menus
}
