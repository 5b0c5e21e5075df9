package dev.baedal.opensearch.hot;

import java.util.Collection;
import java.util.List;
import java.util.function.Supplier;
import org.opensearch.action.ActionRequest;
import org.opensearch.cluster.metadata.IndexNameExpressionResolver;
import org.opensearch.cluster.node.DiscoveryNodes;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.settings.ClusterSettings;
import org.opensearch.common.settings.IndexScopedSettings;
import org.opensearch.common.settings.Setting;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.settings.SettingsFilter;
import org.opensearch.core.action.ActionResponse;
import org.opensearch.core.common.io.stream.NamedWriteableRegistry;
import org.opensearch.core.xcontent.NamedXContentRegistry;
import org.opensearch.env.Environment;
import org.opensearch.env.NodeEnvironment;
import org.opensearch.index.IndexModule;
import org.opensearch.plugins.ActionPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.SearchPlugin;
import org.opensearch.repositories.RepositoriesService;
import org.opensearch.rest.RestController;
import org.opensearch.rest.RestHandler;
import org.opensearch.script.ScriptService;
import org.opensearch.search.fetch.FetchSubPhase;
import org.opensearch.threadpool.ThreadPool;
import org.opensearch.transport.client.Client;
import org.opensearch.watcher.ResourceWatcherService;

/**
 * The {@code baedal-hot} plugin (docs/hot-layout.md): per-node hot shop tables fed by each
 * node's copy of the shop-head index (index listeners), their status route and action, the
 * {@code baedal_hot_shop} / {@code baedal_hot_menu} queries, the {@code baedal_hot} and
 * {@code baedal_hot_rank} sorts, the {@code baedal_hot} search ext with its fetch sub-phase, and
 * {@code baedal_within_delivery_radius}, the native form of the delivery-area script filter.
 *
 * <p>Invariant: one {@link HotTables} per plugin instance (so per node), created with the
 * plugin so that the parsers registered before {@link #createComponents} can hold it, and
 * bound by Guice (returned from createComponents) for the transport action.
 */
public final class HotTablePlugin extends Plugin implements ActionPlugin, SearchPlugin {

    private final HotTables tables = new HotTables();

    @Override
    public List<Setting<?>> getSettings() {
        return List.of(HotTables.TABLE_SETTING, HotTables.CHECK_INTERVAL_SETTING);
    }

    @Override
    public Collection<Object> createComponents(Client client, ClusterService clusterService, ThreadPool threadPool,
                                               ResourceWatcherService resourceWatcherService, ScriptService scriptService,
                                               NamedXContentRegistry xContentRegistry, Environment environment,
                                               NodeEnvironment nodeEnvironment, NamedWriteableRegistry namedWriteableRegistry,
                                               IndexNameExpressionResolver indexNameExpressionResolver,
                                               Supplier<RepositoriesService> repositoriesServiceSupplier) {
        tables.init(clusterService, threadPool, environment.settings());
        return List.of(tables);
    }

    @Override
    public void close() {
        tables.close();
    }

    @Override
    public List<ActionHandler<? extends ActionRequest, ? extends ActionResponse>> getActions() {
        return List.of(new ActionHandler<>(HotStatusAction.INSTANCE, HotStatusAction.Transport.class));
    }

    @Override
    public void onIndexModule(IndexModule indexModule) {
        tables.onIndexModule(indexModule);
    }

    @Override
    public List<RestHandler> getRestHandlers(Settings settings, RestController restController, ClusterSettings clusterSettings,
                                             IndexScopedSettings indexScopedSettings, SettingsFilter settingsFilter,
                                             IndexNameExpressionResolver indexNameExpressionResolver,
                                             Supplier<DiscoveryNodes> nodesInCluster) {
        return List.of(new RestHotAction(tables));
    }

    @Override
    public List<QuerySpec<?>> getQueries() {
        return List.of(
            new QuerySpec<HotShopQueryBuilder>(HotShopQueryBuilder.NAME,
                in -> new HotShopQueryBuilder(in, tables), p -> HotShopQueryBuilder.fromXContent(p, tables)),
            new QuerySpec<HotMenuQueryBuilder>(HotMenuQueryBuilder.NAME,
                in -> new HotMenuQueryBuilder(in, tables), p -> HotMenuQueryBuilder.fromXContent(p, tables)),
            new QuerySpec<DeliveryRadiusQueryBuilder>(DeliveryRadiusQueryBuilder.NAME,
                DeliveryRadiusQueryBuilder::new, DeliveryRadiusQueryBuilder::fromXContent));
    }

    @Override
    public List<SortSpec<?>> getSorts() {
        return List.of(new SortSpec<HotSortBuilder>(HotSortBuilder.NAME,
            in -> new HotSortBuilder(in, tables), (p, name) -> HotSortBuilder.fromXContent(p, name, tables)),
            new SortSpec<HotRankSortBuilder>(HotRankSortBuilder.NAME, in -> new HotRankSortBuilder(in, tables), (p, name) -> HotRankSortBuilder.fromXContent(p, name, tables)));
    }

    @Override
    public List<SearchExtSpec<?>> getSearchExts() {
        return List.of(new SearchExtSpec<HotSearchExt>(HotSearchExt.NAME, HotSearchExt::new, HotSearchExt::fromXContent));
    }

    @Override
    public List<FetchSubPhase> getFetchSubPhases(FetchPhaseConstructionContext context) {
        return List.of(new HotFetchSubPhase(tables));
    }
}
