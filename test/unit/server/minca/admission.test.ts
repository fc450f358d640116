// Admission of a Minca host: who may post a CarryGrant, as the operator's
// MINCA_HOST_ADMISSION says. Pure decisions; the worker test posts real grants under each mode.
import { describe, expect, it } from "vitest";
import { admissionOf, admit } from "../../../../server/minca/admission";

const ALICE = "did:key:zDnaeyrPwbZxpDVLsnvAvAEGYazWB2ZrM7QL4Qb1JPzfiYpKy";
const BOB = "did:key:zDnaemCBstFw5hzNdNggFHZm6GpHoHqNGrwEtrVi9CxGH9V7E";

describe("MINCA_HOST_ADMISSION", () => {
  it("open (the default, also when unset) admits anyone", () => {
    expect(admit(admissionOf({}), ALICE, null)).toEqual({ ok: true });
    expect(admit(admissionOf({ MINCA_HOST_ADMISSION: "open" }), BOB, null)).toEqual({ ok: true });
  });

  it("allowlist admits only the account dids listed (comma or space separated): others 403 not_admitted", () => {
    const a = admissionOf({ MINCA_HOST_ADMISSION: "allowlist", MINCA_HOST_ALLOWLIST: ` ${ALICE}, did:key:zOther ` });
    expect(admit(a, ALICE, null)).toEqual({ ok: true });
    expect(admit(a, BOB, "Bearer anything")).toMatchObject({ ok: false, status: 403, code: "not_admitted" });
  });

  it("token admits only a request carrying Authorization: Bearer <the token>: none 401 admission_required, a wrong one 403 not_admitted", () => {
    const a = admissionOf({ MINCA_HOST_ADMISSION: "token", MINCA_HOST_ADMISSION_TOKEN: "s3cret-token" });
    expect(admit(a, ALICE, "Bearer s3cret-token")).toEqual({ ok: true });
    expect(admit(a, ALICE, "bearer s3cret-token")).toEqual({ ok: true });
    expect(admit(a, ALICE, null)).toMatchObject({ ok: false, status: 401, code: "admission_required" });
    expect(admit(a, ALICE, "Basic s3cret-token")).toMatchObject({ ok: false, status: 401 });
    expect(admit(a, ALICE, "Bearer s3cret-tokeN")).toMatchObject({ ok: false, status: 403, code: "not_admitted" });
    expect(admit(a, ALICE, "Bearer s3cret-token-and-more")).toMatchObject({ ok: false, status: 403 });
  });

  it("an invalid setting (an unknown mode, token with no token set) admits no one", () => {
    for (const env of [
      { MINCA_HOST_ADMISSION: "opne" },
      { MINCA_HOST_ADMISSION: "token" },
      { MINCA_HOST_ADMISSION: "token", MINCA_HOST_ADMISSION_TOKEN: " " },
    ]) {
      const a = admissionOf(env);
      expect(a.mode).toBe("closed");
      expect(admit(a, ALICE, "Bearer x")).toMatchObject({ ok: false, status: 403, code: "not_admitted" });
    }
  });
});
