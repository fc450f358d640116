// The Minca client SDK: what apps import. Connecting by code (the Minca protocol section 3) from both
// sides over the relay's code-channel rooms, and an account's use of a Minca host (section 4).
export { relayRooms, roomUrl, type RelayRoomOptions } from "./relay-room";
export { ProgramExchange } from "./protocol/program";
export type { ProgramOptions, ProgramEvent, ProgramOutcome, ProgramState } from "./protocol/program";
export { HomeExchange } from "./protocol/home";
export type { HomeOptions, HomeEvent, HomeOutcome, HomeState, AskShown, Decision } from "./protocol/home";
export { newCode, codeLink, connectPage, homeOrigin, readCode } from "../../shared/minca/code";
export { checkGrant, DEFAULT_GRANT_DAYS, type Account, type Grant, type GrantCheck } from "./protocol/grant";
export { newP256Key, p256KeyFromJwk, p256KeyToJwk, type P256Key } from "../../shared/minca/es256";
export {
  newAccount,
  sessionNote,
  renewSession,
  SESSION_TTL_SECONDS,
  SESSION_RENEW_BEFORE_SECONDS,
  withNote,
  makeSpace,
  writeVersion,
  HostConnection,
  HostError,
} from "./host";
export type { MincaAccount, WriteInput, HostInfo, VersionResult, LogPage } from "./host";
export { signOutEverywhere, type SignOutResult } from "./sign-out";
export { moveAccount, MoveError, type MoveProgress, type MoveReport, type MoveStep } from "./move";
export { accountFromJson, accountToJson, type AccountFile } from "./account-file";
export { versionBody, type Version } from "../../shared/minca/version";
export type { Space } from "../../shared/minca/space";
export type { JoinRoom, RoomTransport, RoomEvent, RoomMessage } from "./protocol/transport";
