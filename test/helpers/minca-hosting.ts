// What the hosting profile's unit tests share (hosting*.test.ts): a host's did, and the gate a
// host applies to a space's versions.
import type { newSpace } from "../../shared/minca/space";

export const HOST = "did:key:zDnaeyrPwbZxpDVLsnvAvAEGYazWB2ZrM7QL4Qb1JPzfiYpKy";
export const gate = (space: ReturnType<typeof newSpace>, ownMachinery = false) => ({
  space: space.id,
  constitution: space.constitution,
  ownMachinery,
});
