package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParseEvents decodes and validates a batch of events. The body is either a
// JSON array of event objects or NDJSON (one object per line; blank lines are
// ignored). It stops at the first bad event and returns an error naming its
// position: a *BatchError wrapping a *FieldError (ErrInvalidEvent) or
// ErrMalformedJSON. A body without events is ErrEmptyBatch. The caller caps
// the body size.
func ParseEvents(body []byte) ([]Event, error) {
	var events []Event
	var firstErr error
	err := ParseEventsEach(body, func(index int, raw []byte, ev Event, err error) bool {
		if err != nil {
			firstErr = err
			return false
		}
		events = append(events, ev)
		return true
	})
	if err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return events, nil
}

// ParseEventsEach decodes and validates a batch like ParseEvents but hands
// every event to fn, good or bad, with its raw bytes, so a caller can accept
// the good ones and dead-letter the bad ones. evErr is a *BatchError. fn
// returns false to stop. The returned error is for the body as a whole: a
// malformed JSON array (nothing after the damage can be read) or
// ErrEmptyBatch.
func ParseEventsEach(body []byte, fn func(index int, raw []byte, ev Event, evErr error) bool) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return ErrEmptyBatch
	}
	if trimmed[0] == '[' {
		return parseArray(body, fn)
	}
	return parseNDJSON(body, fn)
}

func parseArray(body []byte, fn func(int, []byte, Event, error) bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the '['
		return malformed(err, dec.InputOffset())
	}
	index := 0
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return &BatchError{Index: index, Err: malformed(err, dec.InputOffset())}
		}
		ev, err := decodeAndValidate(raw)
		if err != nil {
			err = &BatchError{Index: index, Err: err}
		}
		if !fn(index, raw, ev, err) {
			return nil
		}
		index++
	}
	if _, err := dec.Token(); err != nil { // the ']'
		return malformed(err, dec.InputOffset())
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the closing ] at byte %d", ErrMalformedJSON, dec.InputOffset())
	}
	if index == 0 {
		return ErrEmptyBatch
	}
	return nil
}

func parseNDJSON(body []byte, fn func(int, []byte, Event, error) bool) error {
	index := 0
	line := 0
	for len(body) > 0 {
		var raw []byte
		raw, body, _ = bytes.Cut(body, []byte{'\n'})
		line++
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		ev, err := decodeAndValidate(raw)
		if err != nil {
			err = &BatchError{Index: index, Line: line, Err: err}
		}
		if !fn(index, raw, ev, err) {
			return nil
		}
		index++
	}
	if index == 0 {
		return ErrEmptyBatch
	}
	return nil
}

func malformed(err error, offset int64) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("%w: %s at byte %d", ErrMalformedJSON, syntax.Error(), syntax.Offset)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: unexpected end of input at byte %d", ErrMalformedJSON, offset)
	}
	return fmt.Errorf("%w: %v near byte %d", ErrMalformedJSON, err, offset)
}

func decodeAndValidate(raw []byte) (Event, error) {
	ev, err := decodeEvent(raw)
	if err != nil {
		return Event{}, err
	}
	if err := ev.Validate(); err != nil {
		return Event{}, err
	}
	return ev, nil
}

var eventKeys = []string{"type", "id", "shop_id", "version", "op", "fields", "menus"}

// decodeEvent decodes one event object strictly (keys and value types) but
// does not check ranges.
func decodeEvent(data []byte) (Event, error) {
	var obj map[string]json.RawMessage
	if err := decodeObject("", data, &obj); err != nil {
		return Event{}, err
	}
	if err := rejectUnknownKeys("", obj, eventKeys); err != nil {
		return Event{}, err
	}
	var ev Event
	var err error
	typ, ok := obj["type"]
	if !ok {
		return Event{}, fieldErr("type", "required, allowed: shop, menu")
	}
	var s string
	if s, err = decodeString("type", typ); err != nil {
		return Event{}, err
	}
	ev.Type = EntityType(s)
	if ev.Type != EntityShop && ev.Type != EntityMenu {
		return Event{}, fieldErr("type", "got "+quoteShort(s)+", allowed: shop, menu")
	}
	if raw, ok := obj["op"]; ok {
		if s, err = decodeString("op", raw); err != nil {
			return Event{}, err
		}
		ev.Op = Op(s)
	} else {
		return Event{}, fieldErr("op", "required, allowed: upsert, delete")
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"id", &ev.ID}, {"shop_id", &ev.ShopID}, {"version", &ev.Version}} {
		raw, ok := obj[f.name]
		if !ok {
			continue
		}
		if *f.dst, err = decodeInt64(f.name, raw); err != nil {
			return Event{}, err
		}
	}
	if raw, ok := obj["fields"]; ok {
		var fields map[string]json.RawMessage
		if err := decodeObject("fields", raw, &fields); err != nil {
			return Event{}, err
		}
		if ev.Type == EntityShop {
			ev.Shop, err = decodeShopFields("fields.", fields)
		} else {
			ev.Menu, err = decodeMenuFields("fields.", fields)
		}
		if err != nil {
			return Event{}, err
		}
	}
	if raw, ok := obj["menus"]; ok {
		if ev.Menus, err = decodeMenuList(ev.ID, raw); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

func decodeMenuList(shopID int64, raw json.RawMessage) ([]Menu, error) {
	if kind := jsonKind(raw); kind != "array" {
		return nil, fieldErr("menus", "got "+describeJSON(raw)+", want an array of menus")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: menus: %v", ErrMalformedJSON, err)
	}
	menus := make([]Menu, len(items))
	for i, item := range items {
		prefix := "menus[" + strconv.Itoa(i) + "]"
		var obj map[string]json.RawMessage
		if err := decodeObject(prefix, item, &obj); err != nil {
			return nil, err
		}
		m := &menus[i]
		m.ShopID = shopID
		idRaw, ok := obj["id"]
		if !ok {
			return nil, fieldErr(prefix+".id", "required")
		}
		var err error
		if m.ID, err = decodeInt64(prefix+".id", idRaw); err != nil {
			return nil, err
		}
		delete(obj, "id")
		if raw, ok := obj["shop_id"]; ok {
			if m.ShopID, err = decodeInt64(prefix+".shop_id", raw); err != nil {
				return nil, err
			}
			delete(obj, "shop_id")
		}
		fields, err := decodeMenuFields(prefix+".", obj)
		if err != nil {
			return nil, err
		}
		if missing := fields.Missing(); len(missing) > 0 {
			return nil, fieldErr(prefix, "a menu in \"menus\" needs every field; missing: "+strings.Join(missing, ", "))
		}
		fields.ApplyTo(m)
	}
	return menus, nil
}

func decodeShopFields(prefix string, obj map[string]json.RawMessage) (*ShopFields, error) {
	if err := rejectUnknownFields(prefix, obj, shopFieldTable[:]); err != nil {
		return nil, err
	}
	f := &ShopFields{}
	for _, field := range shopFieldTable {
		name := field.name
		raw, ok := obj[name]
		if !ok {
			continue
		}
		path := prefix + name
		var err error
		switch name {
		case "name":
			f.Name, err = decodeStringPtr(path, raw)
		case "category":
			f.Category, err = decodeStringPtr(path, raw)
		case "location":
			f.Location, err = decodeGeoPoint(path, raw)
		case "delivery_radius_km":
			f.DeliveryRadiusKm, err = decodeFloatPtr(path, raw)
		case "open":
			f.Open, err = decodeBoolPtr(path, raw)
		case "delivery_minutes":
			f.DeliveryMinutes, err = decodeIntPtr(path, raw)
		case "delivery_fee":
			f.DeliveryFee, err = decodeIntPtr(path, raw)
		case "min_order":
			f.MinOrder, err = decodeIntPtr(path, raw)
		case "rating":
			f.Rating, err = decodeFloatPtr(path, raw)
		case "review_count":
			f.ReviewCount, err = decodeIntPtr(path, raw)
		case "district":
			f.District, err = decodeStringPtr(path, raw)
		case "address":
			f.Address, err = decodeStringPtr(path, raw)
		case "phone":
			f.Phone, err = decodeStringPtr(path, raw)
		case "tags":
			f.Tags, err = decodeStringList(path, raw)
		case "opened_on":
			f.OpenedOn, err = decodeStringPtr(path, raw)
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

func decodeMenuFields(prefix string, obj map[string]json.RawMessage) (*MenuFields, error) {
	if err := rejectUnknownFields(prefix, obj, menuFieldTable[:]); err != nil {
		return nil, err
	}
	f := &MenuFields{}
	for _, field := range menuFieldTable {
		name := field.name
		raw, ok := obj[name]
		if !ok {
			continue
		}
		path := prefix + name
		var err error
		switch name {
		case "name":
			f.Name, err = decodeStringPtr(path, raw)
		case "description":
			f.Description, err = decodeStringPtr(path, raw)
		case "price":
			f.Price, err = decodeIntPtr(path, raw)
		case "extra_fee":
			f.ExtraFee, err = decodeIntPtr(path, raw)
		case "cook_minutes":
			f.CookMinutes, err = decodeIntPtr(path, raw)
		case "popular":
			f.Popular, err = decodeBoolPtr(path, raw)
		case "sold_out":
			f.SoldOut, err = decodeBoolPtr(path, raw)
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// rejectUnknownFields is rejectUnknownKeys for a field table, without
// allocating when every key is known.
func rejectUnknownFields(prefix string, obj map[string]json.RawMessage, table []fieldVolatility) error {
	for key := range obj {
		if _, ok := lookupVolatility(table, key); !ok {
			return rejectUnknownKeys(prefix, obj, fieldNames(table, 0))
		}
	}
	return nil
}

// rejectUnknownKeys reports the first unknown key in sorted order, so the
// message does not depend on map iteration order.
func rejectUnknownKeys(prefix string, obj map[string]json.RawMessage, allowed []string) error {
	var unknown []string
	for key := range obj {
		if !slices.Contains(allowed, key) {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fieldErr(prefix+unknown[0], "unknown field, allowed: "+strings.Join(allowed, ", "))
}

// decodeObject decodes a JSON object into a map of raw values. Syntax errors
// are ErrMalformedJSON; a value that is not an object is a FieldError.
func decodeObject(path string, data []byte, dst *map[string]json.RawMessage) error {
	if kind := jsonKind(data); kind != "object" {
		if !json.Valid(data) {
			var probe any
			return malformed(json.Unmarshal(data, &probe), 0)
		}
		if path == "" {
			return fmt.Errorf("%w: an event must be a JSON object, got %s", ErrInvalidEvent, describeJSON(data))
		}
		return fieldErr(path, "got "+describeJSON(data)+", want an object")
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return malformed(err, 0)
	}
	return nil
}

func decodeGeoPoint(path string, raw json.RawMessage) (*GeoPoint, error) {
	var obj map[string]json.RawMessage
	if err := decodeObject(path, raw, &obj); err != nil {
		return nil, err
	}
	if err := rejectUnknownKeys(path+".", obj, []string{"lat", "lon"}); err != nil {
		return nil, err
	}
	var p GeoPoint
	for _, c := range []struct {
		name string
		dst  *float64
	}{{"lat", &p.Lat}, {"lon", &p.Lon}} {
		v, ok := obj[c.name]
		if !ok {
			return nil, fieldErr(path+"."+c.name, "required")
		}
		f, err := decodeFloatPtr(path+"."+c.name, v)
		if err != nil {
			return nil, err
		}
		*c.dst = *f
	}
	return &p, nil
}

func decodeStringList(path string, raw json.RawMessage) (*[]string, error) {
	if jsonKind(raw) != "array" {
		return nil, fieldErr(path, "got "+describeJSON(raw)+", want an array of strings")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformedJSON, path, err)
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, err := decodeString(path+"["+strconv.Itoa(i)+"]", item)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return &out, nil
}

func decodeString(path string, raw json.RawMessage) (string, error) {
	if jsonKind(raw) != "string" {
		return "", fieldErr(path, "got "+describeJSON(raw)+", want a string")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrMalformedJSON, path, err)
	}
	return s, nil
}

func decodeStringPtr(path string, raw json.RawMessage) (*string, error) {
	s, err := decodeString(path, raw)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func decodeBoolPtr(path string, raw json.RawMessage) (*bool, error) {
	var b bool
	switch string(raw) {
	case "true":
		b = true
	case "false":
	default:
		return nil, fieldErr(path, "got "+describeJSON(raw)+", want a boolean")
	}
	return &b, nil
}

// decodeInt64 accepts only plain JSON integers (no fraction, no exponent),
// so the value is exact.
func decodeInt64(path string, raw json.RawMessage) (int64, error) {
	if jsonKind(raw) != "number" {
		return 0, fieldErr(path, "got "+describeJSON(raw)+", want an integer")
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fieldErr(path, "got "+describeJSON(raw)+", out of the 64-bit integer range")
		}
		return 0, fieldErr(path, "got "+describeJSON(raw)+", want an integer")
	}
	return v, nil
}

func decodeIntPtr(path string, raw json.RawMessage) (*int, error) {
	v, err := decodeInt64(path, raw)
	if err != nil {
		return nil, err
	}
	if v < math.MinInt || v > math.MaxInt {
		return nil, fieldErr(path, "got "+describeJSON(raw)+", out of range")
	}
	n := int(v)
	return &n, nil
}

func decodeFloatPtr(path string, raw json.RawMessage) (*float64, error) {
	if jsonKind(raw) != "number" {
		return nil, fieldErr(path, "got "+describeJSON(raw)+", want a number")
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil, fieldErr(path, "got "+describeJSON(raw)+", out of range")
	}
	return &v, nil
}

// jsonKind names the kind of a valid JSON value from its first byte.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch c := raw[0]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "number"
	}
	return "invalid JSON"
}

// describeJSON renders a raw value for an error message: numbers, booleans
// and null as they are, strings quoted with "(string)", containers by kind.
func describeJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	switch kind := jsonKind(raw); kind {
	case "number", "boolean", "null":
		if len(raw) > 40 {
			return string(raw[:40]) + "..."
		}
		return string(raw)
	case "string":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return quoteShort(s) + " (string)"
		}
		return "a string"
	default:
		return "an " + kind
	}
}
