package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.Objects;
import org.apache.lucene.search.Query;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.index.fielddata.IndexGeoPointFieldData;
import org.opensearch.index.fielddata.IndexNumericFieldData;
import org.opensearch.index.mapper.MappedFieldType;
import org.opensearch.index.query.AbstractQueryBuilder;
import org.opensearch.index.query.QueryShardContext;
import org.opensearch.index.query.QueryShardException;

/**
 * {@code {"baedal_within_delivery_radius": {"lat": LAT, "lon": LON}}}: a root-level filter
 * matching the shops that deliver to the point, i.e. whose {@code location} is within their own
 * {@code delivery_radius_km} of it. It is the native form of the Painless filter the other
 * layouts send,
 * {@code doc['location'].size() > 0 && doc['delivery_radius_km'].size() > 0
 * && doc['location'].arcDistance(lat, lon) <= doc['delivery_radius_km'].value * 1000}:
 * the same field data, the same first values and the same distance function
 * ({@code GeoUtils.arcDistance}), so it matches exactly the same documents, without a script
 * per candidate.
 *
 * <p>Invariant: a document without a location or a radius never matches; an index that does
 * not map either field fails the shard with a message naming it.
 */
public final class DeliveryRadiusQueryBuilder extends AbstractQueryBuilder<DeliveryRadiusQueryBuilder> {

    public static final String NAME = "baedal_within_delivery_radius";
    static final String LOCATION_FIELD = "location";
    static final String RADIUS_FIELD = "delivery_radius_km";

    private final double lat;
    private final double lon;

    public DeliveryRadiusQueryBuilder(double lat, double lon) {
        if (!(lat >= -90 && lat <= 90) || !(lon >= -180 && lon <= 180)) {
            throw new IllegalArgumentException("[" + NAME + "] needs -90 <= lat <= 90 and -180 <= lon <= 180, got lat "
                + lat + " lon " + lon);
        }
        this.lat = lat;
        this.lon = lon;
    }

    public DeliveryRadiusQueryBuilder(StreamInput in) throws IOException {
        super(in);
        lat = in.readDouble();
        lon = in.readDouble();
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        out.writeDouble(lat);
        out.writeDouble(lon);
    }

    public static DeliveryRadiusQueryBuilder fromXContent(XContentParser p) throws IOException {
        Double lat = null;
        Double lon = null;
        float boost = DEFAULT_BOOST;
        String queryName = null;
        XContentParser.Token t;
        while ((t = p.nextToken()) == XContentParser.Token.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "lat" -> lat = p.doubleValue(false);
                case "lon" -> lon = p.doubleValue(false);
                case "boost" -> boost = p.floatValue();
                case "_name" -> queryName = p.text();
                default -> throw new IllegalArgumentException("[" + NAME + "] unknown field [" + f + "]");
            }
        }
        if (t != XContentParser.Token.END_OBJECT) {
            throw new IllegalArgumentException("[" + NAME + "] malformed: expected an object of fields");
        }
        if (lat == null || lon == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [lat] and [lon]");
        }
        DeliveryRadiusQueryBuilder b = new DeliveryRadiusQueryBuilder(lat, lon);
        b.boost(boost);
        b.queryName(queryName);
        return b;
    }

    @Override
    protected void doXContent(XContentBuilder b, Params params) throws IOException {
        b.startObject(NAME);
        b.field("lat", lat);
        b.field("lon", lon);
        printBoostAndQueryName(b);
        b.endObject();
    }

    @Override
    protected Query doToQuery(QueryShardContext ctx) throws IOException {
        MappedFieldType location = ctx.fieldMapper(LOCATION_FIELD);
        MappedFieldType radius = ctx.fieldMapper(RADIUS_FIELD);
        if (location == null || radius == null) {
            throw new QueryShardException(ctx, "[" + NAME + "] needs the fields [" + LOCATION_FIELD + "] and ["
                + RADIUS_FIELD + "] mapped in [" + ctx.index().getName() + "]");
        }
        IndexGeoPointFieldData points = ctx.getForField(location);
        IndexNumericFieldData radii = ctx.getForField(radius);
        return new DeliveryRadiusQuery(LOCATION_FIELD, points, radii, lat, lon);
    }

    @Override
    protected boolean doEquals(DeliveryRadiusQueryBuilder o) {
        return Double.compare(lat, o.lat) == 0 && Double.compare(lon, o.lon) == 0;
    }

    @Override
    protected int doHashCode() {
        return Objects.hash(lat, lon);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }
}
