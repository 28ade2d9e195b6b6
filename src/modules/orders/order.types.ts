/** An accepted purchase on its way to becoming an order row. */
export interface NewOrder {
  requestId: string;
  orderNo: string;
  userId: number;
  goodsId: number;
  quantity: number;
  /** When Redis accepted the purchase (epoch ms); the payment deadline counts from here. */
  acceptedAt: number;
}

export type RejectReason = 'SOLD_OUT' | 'ALREADY_PURCHASED' | 'GOODS_NOT_FOUND';

export type WriteOutcome =
  | { kind: 'written'; order: NewOrder }
  | { kind: 'duplicate'; order: NewOrder }
  | { kind: 'rejected'; order: NewOrder; reason: RejectReason };
