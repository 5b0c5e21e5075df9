package catalog

import "slices"

// ShopFields is the set of shop fields an upsert event carries. A nil pointer
// means "not in this event, unchanged". JSON names match [Shop].
type ShopFields struct {
	Name             *string   `json:"name,omitempty"`
	Category         *string   `json:"category,omitempty"`
	Location         *GeoPoint `json:"location,omitempty"`
	DeliveryRadiusKm *float64  `json:"delivery_radius_km,omitempty"`
	Open             *bool     `json:"open,omitempty"`
	DeliveryMinutes  *int      `json:"delivery_minutes,omitempty"`
	DeliveryFee      *int      `json:"delivery_fee,omitempty"`
	MinOrder         *int      `json:"min_order,omitempty"`
	Rating           *float64  `json:"rating,omitempty"`
	ReviewCount      *int      `json:"review_count,omitempty"`
	District         *string   `json:"district,omitempty"`
	Address          *string   `json:"address,omitempty"`
	Phone            *string   `json:"phone,omitempty"`
	Tags             *[]string `json:"tags,omitempty"`
	OpenedOn         *string   `json:"opened_on,omitempty"`
}

// MenuFields is the set of menu fields an upsert event carries. A nil pointer
// means "not in this event, unchanged". JSON names match [Menu].
type MenuFields struct {
	Name        *string `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
	Price       *int    `json:"price,omitempty"`
	ExtraFee    *int    `json:"extra_fee,omitempty"`
	CookMinutes *int    `json:"cook_minutes,omitempty"`
	Popular     *bool   `json:"popular,omitempty"`
	SoldOut     *bool   `json:"sold_out,omitempty"`
}

// ShopFieldsFrom returns a ShopFields with every field set from s (Tags copied).
func ShopFieldsFrom(s Shop) *ShopFields {
	tags := slices.Clone(s.Tags)
	if tags == nil {
		tags = []string{}
	}
	return &ShopFields{
		Name: &s.Name, Category: &s.Category, Location: &s.Location,
		DeliveryRadiusKm: &s.DeliveryRadiusKm, Open: &s.Open,
		DeliveryMinutes: &s.DeliveryMinutes, DeliveryFee: &s.DeliveryFee,
		MinOrder: &s.MinOrder, Rating: &s.Rating, ReviewCount: &s.ReviewCount,
		District: &s.District, Address: &s.Address, Phone: &s.Phone,
		Tags: &tags, OpenedOn: &s.OpenedOn,
	}
}

// MenuFieldsFrom returns a MenuFields with every field set from m.
func MenuFieldsFrom(m Menu) *MenuFields {
	return &MenuFields{
		Name: &m.Name, Description: &m.Description, Price: &m.Price,
		ExtraFee: &m.ExtraFee, CookMinutes: &m.CookMinutes,
		Popular: &m.Popular, SoldOut: &m.SoldOut,
	}
}

// setFlags lists, in shopFieldTable order, whether each field is set.
func (f *ShopFields) setFlags() [len(shopFieldTable)]bool {
	return [...]bool{
		f.Name != nil, f.Category != nil, f.Location != nil, f.DeliveryRadiusKm != nil,
		f.Open != nil, f.DeliveryMinutes != nil, f.DeliveryFee != nil, f.MinOrder != nil,
		f.Rating != nil, f.ReviewCount != nil, f.District != nil, f.Address != nil,
		f.Phone != nil, f.Tags != nil, f.OpenedOn != nil,
	}
}

func (f *MenuFields) setFlags() [len(menuFieldTable)]bool {
	return [...]bool{
		f.Name != nil, f.Description != nil, f.Price != nil, f.ExtraFee != nil,
		f.CookMinutes != nil, f.Popular != nil, f.SoldOut != nil,
	}
}

func namesWhere(table []fieldVolatility, flags []bool, want bool) []string {
	var out []string
	for i, set := range flags {
		if set == want {
			out = append(out, table[i].name)
		}
	}
	return out
}

// Names returns the JSON names of the fields that are set, in canonical order.
func (f *ShopFields) Names() []string {
	if f == nil {
		return nil
	}
	flags := f.setFlags()
	return namesWhere(shopFieldTable[:], flags[:], true)
}

// Missing returns the JSON names of the fields that are not set.
func (f *ShopFields) Missing() []string {
	if f == nil {
		return ShopFieldNames()
	}
	flags := f.setFlags()
	return namesWhere(shopFieldTable[:], flags[:], false)
}

// Names returns the JSON names of the fields that are set, in canonical order.
func (f *MenuFields) Names() []string {
	if f == nil {
		return nil
	}
	flags := f.setFlags()
	return namesWhere(menuFieldTable[:], flags[:], true)
}

// Missing returns the JSON names of the fields that are not set.
func (f *MenuFields) Missing() []string {
	if f == nil {
		return MenuFieldNames()
	}
	flags := f.setFlags()
	return namesWhere(menuFieldTable[:], flags[:], false)
}

// ApplyTo copies the set fields into s. Tags are copied, not aliased.
func (f *ShopFields) ApplyTo(s *Shop) {
	if f.Name != nil {
		s.Name = *f.Name
	}
	if f.Category != nil {
		s.Category = *f.Category
	}
	if f.Location != nil {
		s.Location = *f.Location
	}
	if f.DeliveryRadiusKm != nil {
		s.DeliveryRadiusKm = *f.DeliveryRadiusKm
	}
	if f.Open != nil {
		s.Open = *f.Open
	}
	if f.DeliveryMinutes != nil {
		s.DeliveryMinutes = *f.DeliveryMinutes
	}
	if f.DeliveryFee != nil {
		s.DeliveryFee = *f.DeliveryFee
	}
	if f.MinOrder != nil {
		s.MinOrder = *f.MinOrder
	}
	if f.Rating != nil {
		s.Rating = *f.Rating
	}
	if f.ReviewCount != nil {
		s.ReviewCount = *f.ReviewCount
	}
	if f.District != nil {
		s.District = *f.District
	}
	if f.Address != nil {
		s.Address = *f.Address
	}
	if f.Phone != nil {
		s.Phone = *f.Phone
	}
	if f.Tags != nil {
		s.Tags = append([]string{}, (*f.Tags)...)
	}
	if f.OpenedOn != nil {
		s.OpenedOn = *f.OpenedOn
	}
}

// ApplyTo copies the set fields into m.
func (f *MenuFields) ApplyTo(m *Menu) {
	if f.Name != nil {
		m.Name = *f.Name
	}
	if f.Description != nil {
		m.Description = *f.Description
	}
	if f.Price != nil {
		m.Price = *f.Price
	}
	if f.ExtraFee != nil {
		m.ExtraFee = *f.ExtraFee
	}
	if f.CookMinutes != nil {
		m.CookMinutes = *f.CookMinutes
	}
	if f.Popular != nil {
		m.Popular = *f.Popular
	}
	if f.SoldOut != nil {
		m.SoldOut = *f.SoldOut
	}
}
