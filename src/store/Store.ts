import { Layer } from "effect"
import { CatalogTableRepo } from "./CatalogTableRepo.js"
import { CatalogWritesRepoLive } from "./CatalogWritesRepo.js"
import { CurationRepo } from "./CurationRepo.js"
import { DatabaseLive } from "./Database.js"
import { EconomicEventsRepo } from "./EconomicEventsRepo.js"
import { MetricsRepo } from "./MetricsRepo.js"
import { ObservationsRepo } from "./ObservationsRepo.js"
import { ProbeScheduleRepo } from "./ProbeScheduleRepo.js"
import { ProbeSpendRepo } from "./ProbeSpendRepo.js"
import { RateLimitStore } from "./RateLimitStore.js"
import { ReceiptsRepo } from "./ReceiptsRepo.js"
import { ResourceListingRepoLive } from "./ResourceListingRepo.js"
import { ResourceReadsRepoLive } from "./ResourceReadsRepo.js"
import { RouteCandidatesRepoLive } from "./RouteCandidatesRepo.js"
import { SearchSql } from "./SearchSql.js"
import { SettlementJournal } from "./SettlementJournal.js"
import { TransitionsRepo } from "./TransitionsRepo.js"
import { VerifyAnswersRepo } from "./VerifyAnswersRepo.js"

/** Every repository over one migrated store (SQLite file, `:memory:` or Postgres), with the SqlClient exposed. */
export const StoreLive = (database: string) =>
  Layer.mergeAll(
    CatalogWritesRepoLive,
    ResourceListingRepoLive,
    ResourceReadsRepoLive,
    RouteCandidatesRepoLive,
    MetricsRepo.Live,
    ObservationsRepo.Live,
    TransitionsRepo.Live,
    EconomicEventsRepo.Live,
    ReceiptsRepo.Live,
    SettlementJournal.Live,
    ProbeSpendRepo.Live,
    ProbeScheduleRepo.Live,
    CurationRepo.Live,
    VerifyAnswersRepo.Live,
    CatalogTableRepo.Live,
    RateLimitStore.Live
  ).pipe(Layer.provide(SearchSql.Live), Layer.provideMerge(DatabaseLive(database)))

/** The same store in memory, fresh for each build: what tests stand on. */
export const StoreTest = StoreLive(":memory:")
