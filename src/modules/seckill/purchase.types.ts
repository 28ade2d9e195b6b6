export interface PurchaseAccepted {
  status: 'QUEUED';
  requestId: string;
}

export interface PurchaseResultView {
  status: 'NONE' | 'QUEUED' | 'SUCCESS' | 'FAILED';
  requestId?: string;
  orderNo?: string;
  reason?: string;
}

/** What the purchase route reads from its headers, besides the user. */
export interface PurchaseCredentials {
  idempotencyKey?: string;
  token?: string;
}
