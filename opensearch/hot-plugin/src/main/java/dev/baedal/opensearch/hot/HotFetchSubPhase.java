package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.SortedNumericDocValues;
import org.opensearch.common.document.DocumentField;
import org.opensearch.search.SearchExtBuilder;
import org.opensearch.search.fetch.FetchContext;
import org.opensearch.search.fetch.FetchSubPhase;
import org.opensearch.search.fetch.FetchSubPhaseProcessor;

/**
 * With {@link HotSearchExt} in the request, adds {@code fields.baedal_hot: [{version, open,
 * delivery_minutes, delivery_fee, rating, review_count}]} to every top-level hit whose
 * {@code id} is a live entry of the table (a hit of a shop missing or deleted from the table
 * gets no {@code baedal_hot} field).
 *
 * <p>Invariants: skips nested hits (inner hits run the fetch phase again with the same ext);
 * 503 when the table is not ready; reads each segment's {@code id} doc values forward only,
 * reopening them if a hit comes out of doc order.
 */
final class HotFetchSubPhase implements FetchSubPhase {

    static final String FIELD = "baedal_hot";

    private final HotTables tables;

    HotFetchSubPhase(HotTables tables) {
        this.tables = tables;
    }

    @Override
    public FetchSubPhaseProcessor getProcessor(FetchContext ctx) {
        SearchExtBuilder ext = ctx.getSearchExt(HotSearchExt.NAME);
        if (!(ext instanceof HotSearchExt hot)) {
            return null;
        }
        HotRows table = tables.rows(hot.table(), ctx.searcher());
        return new FetchSubPhaseProcessor() {
            private LeafReaderContext leaf;
            private SortedNumericDocValues ids;
            private final HotTable.Row row = new HotTable.Row();

            @Override
            public void setNextReader(LeafReaderContext readerContext) throws IOException {
                leaf = readerContext;
                ids = DocValues.getSortedNumeric(readerContext.reader(), HotFilterQuery.ID_FIELD);
            }

            @Override
            public void process(HitContext hit) throws IOException {
                if (hit.hit().getNestedIdentity() != null) {
                    return;
                }
                int doc = hit.docId();
                if (doc < ids.docID()) {
                    ids = DocValues.getSortedNumeric(leaf.reader(), HotFilterQuery.ID_FIELD);
                }
                if (!ids.advanceExact(doc) || !table.readLive(ids.nextValue(), row)) {
                    return;
                }
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("version", row.version);
                m.put("open", row.open);
                m.put("delivery_minutes", row.deliveryMinutes);
                m.put("delivery_fee", row.deliveryFee);
                m.put("rating", row.rating);
                m.put("review_count", row.reviewCount);
                hit.hit().setDocumentField(FIELD, new DocumentField(FIELD, List.of(m)));
            }
        };
    }
}
