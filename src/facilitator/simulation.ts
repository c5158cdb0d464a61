import { rpc, type xdr } from "@stellar/stellar-sdk"
import { Either } from "effect"
import { transferOfContractEvent } from "../ledger/decode.js"
import { Reason, type Refusal, refuse } from "./reasons.js"
import type { ExactTerms } from "./verifyRules.js"

/** What a successful simulation tells the settle: the resource fee and footprint to assemble with. */
export interface Simulated {
  readonly success: rpc.Api.SimulateTransactionSuccessResponse
  readonly minResourceFee: bigint
}

/** The contract events a simulation reports (diagnostic events that are contract events). */
const contractEvents = (events: ReadonlyArray<xdr.DiagnosticEvent>) =>
  events.map((e) => e.event).filter((e) => e.type.name === "contract")

const sameEntry = (a: xdr.SorobanAuthorizationEntry, b: xdr.SorobanAuthorizationEntry) =>
  Buffer.from(a.rootInvocation.toXdr()).equals(Buffer.from(b.rootInvocation.toXdr()))

/**
 * Judges a simulation of the payer's invocation with a facilitator account as source (the
 * scheme's "Simulation" and "Facilitator Safety" rules): it succeeded; it asks for no
 * authorisation the transaction does not already carry (no facilitator signature, no one else's);
 * and its contract events are exactly one SEP-41 `transfer` of `terms.amount` of `terms.asset`
 * from the payer to `terms.payTo`, so no other balance moves.
 */
export const judgeSimulation = (
  answer: rpc.Api.SimulateTransactionResponse,
  payer: string,
  terms: ExactTerms,
  carried: ReadonlyArray<xdr.SorobanAuthorizationEntry>
): Either.Either<Simulated, Refusal> => {
  if (!rpc.Api.isSimulationSuccess(answer) || rpc.Api.isSimulationRestore(answer)) {
    const error = rpc.Api.isSimulationError(answer) ? answer.error : "it needs a ledger entry restored first"
    return Either.left(refuse(Reason.simulationFailed, `simulation failed: ${error.split("\n")[0]!.slice(0, 300)}`))
  }
  const asked = answer.result?.auth ?? []
  if (asked.some((entry) => !carried.some((own) => sameEntry(own, entry)))) {
    return Either.left(
      refuse(Reason.pendingSignatures, "simulation asks for an authorisation the payment does not carry")
    )
  }
  const events = contractEvents(answer.events)
  const transfers = []
  for (const event of events) {
    const transfer = transferOfContractEvent(event)
    if (transfer === null)
      return Either.left(refuse(Reason.noTransferEvents, "simulation emitted a contract event that is not a transfer"))
    transfers.push(transfer)
  }
  const [transfer, ...others] = transfers
  if (transfer === undefined)
    return Either.left(refuse(Reason.noTransferEvents, "simulation emitted no transfer event"))
  if (others.length > 0)
    return Either.left(refuse(Reason.multipleTransfers, "simulation emitted more than one transfer"))
  if (transfer.contract !== terms.asset)
    return Either.left(refuse(Reason.eventWrongAsset, "the simulated transfer is of another asset"))
  if (transfer.from !== payer)
    return Either.left(refuse(Reason.eventWrongFrom, "the simulated transfer is from another address"))
  if (transfer.to !== terms.payTo)
    return Either.left(refuse(Reason.eventWrongTo, "the simulated transfer pays another address"))
  if (transfer.amount !== terms.amount)
    return Either.left(refuse(Reason.eventWrongAmount, "the simulated transfer moves another amount"))
  return Either.right({ success: answer, minResourceFee: BigInt(answer.minResourceFee) })
}
