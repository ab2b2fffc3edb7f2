// A custom type for the tests: money as a 3-letter currency and an int64 amount in cents.
// Binary: 3 ASCII bytes, then int64 LE. JSON: "EUR 12.34".
import type { BinaryReader, BinaryWriter, CustomType } from '@trivium/codec/runtime'

export interface MoneyValue {
  currency: string
  cents: bigint
}

export const Money: CustomType<MoneyValue> = {
  name: 'Money',
  jsonSchema: { type: 'string', pattern: '^[A-Z]{3} -?[0-9]+\\.[0-9]{2}$' },
  minSize: 11,
  write(w: BinaryWriter, v: MoneyValue) {
    if (!/^[A-Z]{3}$/.test(v.currency)) throw new TypeError(`bad currency ${v.currency}`)
    w.ensure(3)
    for (let i = 0; i < 3; i++) w.buf[w.pos++] = v.currency.charCodeAt(i)
    w.int64(v.cents)
  },
  read(r: BinaryReader) {
    if (r.remaining < 3) r.fail('truncated Money')
    let currency = ''
    for (let i = 0; i < 3; i++) {
      const c = r.u8()
      if (c < 65 || c > 90) r.fail(`invalid currency byte ${c}`)
      currency += String.fromCharCode(c)
    }
    return { currency, cents: r.int64() }
  },
  fromJSON(json: unknown) {
    const m = typeof json === 'string' ? /^([A-Z]{3}) (-?)([0-9]+)\.([0-9]{2})$/.exec(json) : null
    if (!m) throw new Error('must be money like "EUR 12.34"')
    const cents = BigInt(m[3]!) * 100n + BigInt(m[4]!)
    return { currency: m[1]!, cents: m[2] ? -cents : cents }
  },
  toJSON(v: MoneyValue) {
    const neg = v.cents < 0n
    const abs = neg ? -v.cents : v.cents
    return `${v.currency} ${neg ? '-' : ''}${abs / 100n}.${String(abs % 100n).padStart(2, '0')}`
  },
  equals: (a, b) => a.currency === b.currency && a.cents === b.cents,
}
